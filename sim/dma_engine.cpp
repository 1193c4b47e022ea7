#include "sim/dma_engine.h"

#include <algorithm>

#include "isa/error.h"

namespace fracsim::sim {

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, uint64_t period_ps, uint64_t latency_ps,
                     uint64_t link_bandwidth, bool pipelined)
    : sc_module(name),
      socket("socket"),
      period_ps_(period_ps),
      latency_cycles_((latency_ps + period_ps - 1) / period_ps),
      link_bandwidth_(link_bandwidth),
      pipelined_(pipelined) {}

// A run that stops on an error can leave a batch in flight: its payload must not free the
// extension, a member.
DmaEngine::~DmaEngine() {
  for (Batch& b : batch_) b.gp.clear_extension(&b.ext);
}

void DmaEngine::begin(Channel channel, uint64_t bytes, uint64_t span_begin, uint64_t span_end,
                      uint64_t copies, int route, bool latency, uint64_t requested_ps) {
  Batch& b = batch_[channel];
  FRACSIM_ASSERT(b.step == Step::idle, "{}: a batch began on a busy channel", name());
  b.step = Step::start;
  b.bytes = bytes;
  b.cycles = 0;
  b.latency = latency ? latency_cycles_ : 0;
  const uint64_t now = sc_core::sc_time_stamp().value();
  if (pipelined_ && requested_ps < now)
    b.latency -= std::min(b.latency, (now - requested_ps) / period_ps_);
  // The payload carries no data: timing only. Data moves through DMI (parent_view).
  b.ext.link_bandwidth = link_bandwidth_;
  b.ext.copies = copies;
  b.ext.span_begin = span_begin;
  b.ext.span_end = span_end;
  b.ext.route = route;
}

void DmaEngine::send(Batch& b, tlm::tlm_phase phase) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_fw(b.gp, phase, delay);
}

bool DmaEngine::advance(Channel channel) {
  Batch& b = batch_[channel];
  while (true) switch (b.step) {
      case Step::idle:
        return true;
      case Step::start:
        if (b.bytes == 0) {
          b.step = Step::idle;
          return true;
        }
        b.step = Step::data;
        if (b.latency > 0) {
          sc_core::next_trigger(sc_core::sc_time::from_value(b.latency * period_ps_));
          return false;
        }
        break;
      case Step::data:
        if (!b.done) b.done = std::make_unique<sc_core::sc_event>();
        b.t_data = sc_core::sc_time_stamp().value();
        b.ext.done = b.done.get();
        b.gp.set_command(channel == kRead ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        b.gp.set_address(b.ext.span_begin);
        b.gp.set_data_ptr(&b.unused);
        b.gp.set_data_length(static_cast<unsigned int>(b.bytes));
        b.gp.set_streaming_width(static_cast<unsigned int>(b.bytes));
        b.gp.set_byte_enable_ptr(nullptr);
        b.gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        b.gp.set_extension(&b.ext);
        send(b, tlm::BEGIN_REQ);
        b.step = Step::end;
        sc_core::next_trigger(*b.done);  // the memory notifies it when the last byte has moved
        return false;
      case Step::end: {
        send(b, tlm::END_RESP);
        b.gp.clear_extension(&b.ext);  // a member: the payload must not free it
        FRACSIM_ASSERT(b.gp.is_response_ok(), "{}: transfer failed", name());
        // The stage holds the channel to the end of the cycle in which the last byte arrives.
        const uint64_t data_ps = sc_core::sc_time_stamp().value() - b.t_data;
        const uint64_t data_cycles = (data_ps + period_ps_ - 1) / period_ps_;
        b.cycles = b.latency + data_cycles;
        b.step = Step::round;
        if (data_cycles * period_ps_ > data_ps) {
          sc_core::next_trigger(sc_core::sc_time::from_value(data_cycles * period_ps_ - data_ps));
          return false;
        }
        break;
      }
      case Step::round:
        b.step = Step::idle;
        return true;
    }
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
