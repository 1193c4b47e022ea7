// A node's DMA engine: the TLM initiator that moves tiles between the parent's memory and the
// node's local memory. Two channels (0 = loads for LD, 1 = write-backs for WB) run at once; the
// link is full duplex, the parent memory's bandwidth is shared by everything in flight on it.
//
// Time of one batch of B bytes (all the tiles of one piece in one direction), node clock:
//   ceil((link latency + parent memory latency) / period)     descriptors are pipelined, so
//                                                              the latency is paid once
//                                                              (with a pipelined link, less
//                                                              the whole cycles since the
//                                                              batch could be requested)
// + ceil(data phase / period)                                 the memory's data phase; alone
//                                                              on the memory that is
//                                                              ceil(B * clock / min(link, memory))
//
// The node's stages are SC_METHOD state machines, so a batch is driven step by step: the stage
// calls begin() and then advance() each time its process runs until advance() says the batch
// is done; while it is not, advance() has set the process's next trigger. On the socket a batch
// is one TLM-2.0 non-blocking transaction (Memory documents the phases).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

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
            uint64_t link_bandwidth, bool pipelined);
  ~DmaEngine() override;

  tlm_utils::simple_initiator_socket<DmaEngine> socket;

  // Starts one batch of `bytes` on `channel` touching [span_begin, span_end) of the parent
  // memory on behalf of `copies` identical nodes; `route` names the parent memory when the
  // engine is bound to an Interconnect. The channel must be idle.
  // `latency`: false for a batch that directly follows another of the same load (its
  // descriptors were issued with the first's). `requested_ps`: when the batch could have been
  // requested (its piece ready for it); on a pipelined link (LinkSpec::pipelined) the latency
  // has run since then, while the channel still moved the batches ahead of it, and only the
  // rest is paid. Later than now, or on a link that is not pipelined: the whole latency.
  void begin(Channel channel, uint64_t bytes, uint64_t span_begin, uint64_t span_end,
             uint64_t copies, int route, bool latency = true, uint64_t requested_ps = UINT64_MAX);
  // Moves the channel's batch on, from inside the SC_METHOD that began it: true when it is done
  // (cycles() then holds its node cycles), false after setting the method's next trigger.
  bool advance(Channel channel);
  uint64_t cycles(Channel channel) const { return batch_[channel].cycles; }
  // The link's and the parent memory's latency, whole node cycles.
  uint64_t latency_cycles() const { return latency_cycles_; }
  // The parent memory's storage through DMI (functional mode); empty in timing mode.
  isa::MemoryView parent_view();

 private:
  enum class Step { idle, start, data, end, round };
  struct Batch {
    Step step = Step::idle;
    uint64_t bytes = 0, t_data = 0, cycles = 0, latency = 0;
    TransferExtension ext;
    tlm::tlm_generic_payload gp;
    unsigned char unused = 0;
    std::unique_ptr<sc_core::sc_event> done;  // made at the first batch, during the run
  };
  void send(Batch& b, tlm::tlm_phase phase);

  uint64_t period_ps_, latency_cycles_, link_bandwidth_;
  bool pipelined_;
  std::array<Batch, 2> batch_;
  bool dmi_checked_ = false;
  isa::MemoryView dmi_{};
};

}  // namespace fracsim::sim
