// sc_spawn: the memory's process is made at its first transaction.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/memory.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <sys/mman.h>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::sim {

Memory::Memory(const sc_core::sc_module_name& name, const MemorySpec& spec, bool storage)
    : sc_module(name), socket("socket"), spec_(spec), share_(spec.bandwidth) {
  if (storage && spec.capacity > 0) {
    // Reserve address space only: pages are zero until touched, so a 256 GiB main memory costs
    // what the program uses.
    void* p = mmap(nullptr, spec.capacity, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw ConfigError(fmt::format(
          "cannot reserve {} bytes of host address space for a functional run", spec.capacity));
    data_ = static_cast<uint8_t*>(p);
  }
  socket.register_nb_transport_fw(this, &Memory::nb_transport_fw);
  socket.register_get_direct_mem_ptr(this, &Memory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &Memory::transport_dbg);
}

Memory::~Memory() {
  if (data_) munmap(data_, spec_.capacity);
}

tlm::tlm_sync_enum Memory::nb_transport_fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                           sc_core::sc_time& delay) {
  // Initiators here run at the target's time; an annotated delay is not part of the protocol.
  FRACSIM_ASSERT(delay == sc_core::SC_ZERO_TIME, "{}: a transaction with a delay", name());
  auto* ext = gp.get_extension<TransferExtension>();
  FRACSIM_ASSERT(ext && ext->done, "{}: a transfer without its extension", name());
  if (phase == tlm::BEGIN_REQ) {
    if (!wake_) {
      wake_ = std::make_unique<sc_core::sc_event>();
      sc_core::sc_spawn_options method;
      method.spawn_method();
      method.set_sensitivity(wake_.get());
      method.dont_initialize();
      // Named after the memory (unique; SystemC's generated names cost more than the process).
      std::string process = fmt::format("{}_wake", name());
      std::replace(process.begin(), process.end(), '.', '_');
      sc_core::sc_spawn(sc_bind(&Memory::on_wake, this), process.c_str(), &method);
    }
    const int id = share_.start(sc_core::sc_time_stamp().value(), gp.get_data_length(),
                                ext->link_bandwidth, ext->copies);
    waiting_.emplace_back(id, ext->done);
    reschedule();
    return tlm::TLM_ACCEPTED;
  }
  FRACSIM_ASSERT(phase == tlm::END_RESP, "{}: unexpected phase {}", name(), phase.get_name());
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return tlm::TLM_COMPLETED;
}

void Memory::on_wake() {
  for (int id : share_.advance(sc_core::sc_time_stamp().value()))
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (it->first == id) {
        it->second->notify(sc_core::SC_ZERO_TIME);
        waiting_.erase(it);
        break;
      }
  reschedule();
}

void Memory::reschedule() {
  wake_->cancel();
  if (auto t = share_.next_end())
    wake_->notify(sc_core::sc_time::from_value(*t - sc_core::sc_time_stamp().value()));
}

bool Memory::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
  if (!data_) return false;
  dmi.set_dmi_ptr(data_);
  dmi.set_start_address(0);
  dmi.set_end_address(spec_.capacity - 1);
  dmi.allow_read_write();
  gp.set_dmi_allowed(true);
  return true;
}

unsigned int Memory::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  const uint64_t a = gp.get_address(), n = gp.get_data_length();
  if (!data_ || a >= spec_.capacity) return 0;
  const uint64_t len = std::min<uint64_t>(n, spec_.capacity - a);
  if (gp.is_read())
    std::memcpy(gp.get_data_ptr(), data_ + a, len);
  else if (gp.is_write())
    std::memcpy(data_ + a, gp.get_data_ptr(), len);
  return static_cast<unsigned int>(len);
}

}  // namespace fracsim::sim
