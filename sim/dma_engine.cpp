#include "sim/dma_engine.h"

#include "isa/error.h"

namespace fracsim::sim {

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, uint64_t period_ps, uint64_t latency_ps,
                     uint64_t link_bandwidth)
    : sc_module(name),
      socket("socket"),
      period_ps_(period_ps),
      latency_cycles_((latency_ps + period_ps - 1) / period_ps),
      link_bandwidth_(link_bandwidth),
      // Named: SystemC names unnamed events through a string stream, which costs more.
      done_{sc_core::sc_event("read_done"), sc_core::sc_event("write_done")} {}

uint64_t DmaEngine::transfer(Channel channel, uint64_t bytes, uint64_t span_begin,
                             uint64_t span_end, uint64_t copies, int route) {
  if (bytes == 0) return 0;
  if (latency_cycles_ > 0)
    sc_core::wait(sc_core::sc_time::from_value(latency_cycles_ * period_ps_));
  const uint64_t t_data = sc_core::sc_time_stamp().value();
  // The payload carries no data: timing only. Data moves through DMI (parent_view).
  TransferExtension ext;
  ext.link_bandwidth = link_bandwidth_;
  ext.copies = copies;
  ext.span_begin = span_begin;
  ext.span_end = span_end;
  ext.done = &done_[channel];
  ext.route = route;
  unsigned char unused = 0;
  tlm::tlm_generic_payload gp;
  gp.set_command(channel == kRead ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  gp.set_address(span_begin);
  gp.set_data_ptr(&unused);
  gp.set_data_length(static_cast<unsigned int>(bytes));
  gp.set_streaming_width(static_cast<unsigned int>(bytes));
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp.set_extension(&ext);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(gp, delay);
  gp.clear_extension(&ext);  // it lives on this stack, the payload must not free it
  FRACSIM_ASSERT(gp.is_response_ok(), "{}: transfer failed", name());
  // The stage holds the channel to the end of the cycle in which the last byte arrives.
  const uint64_t data_ps = sc_core::sc_time_stamp().value() - t_data;
  const uint64_t data_cycles = (data_ps + period_ps_ - 1) / period_ps_;
  if (data_cycles * period_ps_ > data_ps)
    sc_core::wait(sc_core::sc_time::from_value(data_cycles * period_ps_ - data_ps));
  return latency_cycles_ + data_cycles;
}

isa::MemoryView DmaEngine::parent_view() {
  if (!dmi_checked_) {
    dmi_checked_ = true;
    tlm::tlm_generic_payload gp;
    tlm::tlm_dmi dmi;
    gp.set_address(0);
    gp.set_command(tlm::TLM_READ_COMMAND);
    if (socket->get_direct_mem_ptr(gp, dmi)) dmi_ = {dmi.get_dmi_ptr(), dmi.get_end_address() + 1};
  }
  return dmi_;
}

}  // namespace fracsim::sim
