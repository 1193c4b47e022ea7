// A node's DMA engine: the TLM initiator that moves tiles between the parent's memory and the
// node's local memory. Two channels (0 = loads for LD, 1 = write-backs for WB) run at once; the
// link is full duplex, the parent memory's bandwidth is shared by everything in flight on it.
//
// Time of one batch of B bytes (all the tiles of one piece in one direction), node clock:
//   ceil((link latency + parent memory latency) / period)     descriptors are pipelined, so
//                                                              the latency is paid once
// + ceil(data phase / period)                                 the memory's b_transport; alone
//                                                              on the memory that is
//                                                              ceil(B * clock / min(link, memory))
#pragma once

#include <cstdint>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "isa/reference.h"
#include "sim/memory.h"

namespace fracsim::sim {

class DmaEngine : public sc_core::sc_module {
 public:
  enum Channel { kRead = 0, kWrite = 1 };

  DmaEngine(const sc_core::sc_module_name& name, uint64_t period_ps, uint64_t latency_ps,
            uint64_t link_bandwidth);

  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  // Moves one batch of `bytes` touching [span_begin, span_end) of the parent memory on behalf
  // of `copies` identical nodes; blocks the calling thread; returns the node cycles it took.
  // `route` names the parent memory when the engine is bound to an Interconnect.
  uint64_t transfer(Channel channel, uint64_t bytes, uint64_t span_begin, uint64_t span_end,
                    uint64_t copies, int route);
  // The parent memory's storage through DMI (functional mode); empty in timing mode.
  isa::MemoryView parent_view();

 private:
  uint64_t period_ps_, latency_cycles_, link_bandwidth_;
  sc_core::sc_event done_[2];
  bool dmi_checked_ = false;
  isa::MemoryView dmi_{};
};

}  // namespace fracsim::sim
