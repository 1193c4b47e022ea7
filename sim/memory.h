// A memory of the machine (the root's main memory, or a node's local memory) as a TLM-2.0
// target. Its children's DMA engines are initiators bound to its multi-target socket.
//
//  - Timing: one DMA batch (the payload's data length in bytes) is one non-blocking
//    transaction. BEGIN_REQ starts its data phase, which moves at the rate SharedBandwidth
//    gives it among the transfers in progress, reads and writes alike (the call returns
//    TLM_ACCEPTED); the memory notifies the extension's `done` event when the last byte has
//    moved; the initiator, woken by it, ends the transaction with END_RESP (TLM_COMPLETED,
//    response OK). Access latency is paid by the initiator before BEGIN_REQ (DmaEngine), so
//    the transaction covers the data phase only. Banks: the memory is interleaved across its
//    banks at a fine grain, so a transfer streams from all of them at once and `bandwidth` is
//    the aggregate; banks are not timed separately.
//  - Data (functional mode): the storage is reached through DMI (get_direct_mem_ptr); the DMA
//    engine copies strided tiles with it after the timed transaction.
#pragma once

#include <cstdint>
#include <memory>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "isa/reference.h"
#include "sim/machine_spec.h"
#include "sim/shared_bandwidth.h"

namespace fracsim::sim {

// What a DMA batch tells the memory beyond the generic payload.
struct TransferExtension : tlm::tlm_extension<TransferExtension> {
  uint64_t link_bandwidth = 0;            // bytes per second: the initiator's link caps its rate
  uint64_t copies = 1;                    // identical initiators this transfer stands for (folding)
  uint64_t span_begin = 0, span_end = 0;  // bytes of this memory the batch touches
  sc_core::sc_event* done = nullptr;      // notified when the data phase ends
  int route = 0;                          // which parent memory, through an Interconnect (folding)

  tlm::tlm_extension_base* clone() const override { return new TransferExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const TransferExtension&>(other);
  }
};

class Memory : public sc_core::sc_module {
 public:
  // `storage`: back the bytes (functional mode); pages are reserved lazily, zero until written.
  Memory(const sc_core::sc_module_name& name, const MemorySpec& spec, bool storage);
  ~Memory() override;

  tlm_utils::multi_passthrough_target_socket<Memory, 32, tlm::tlm_base_protocol_types, 0,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      socket;

  // The owner's view of its storage (empty in timing mode).
  isa::MemoryView view() { return {data_, data_ ? spec_.capacity : 0}; }
  const MemorySpec& spec() const { return spec_; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  void on_wake();
  void reschedule();

  MemorySpec spec_;
  uint8_t* data_ = nullptr;
  SharedBandwidth share_;
  std::vector<std::pair<int, sc_core::sc_event*>> waiting_;  // transfer id -> its done event
  // Made at the first transaction, during the run: a folded run builds memories it never uses.
  std::unique_ptr<sc_core::sc_event> wake_;
};

}  // namespace fracsim::sim
