#include "sim/interconnect.h"

#include "isa/error.h"
#include "sim/memory.h"

namespace fracsim::sim {

Interconnect::Interconnect(const sc_core::sc_module_name& name)
    : sc_module(name), from_children("from_children"), to_parents("to_parents") {
  from_children.register_nb_transport_fw(this, &Interconnect::nb_transport_fw);
  from_children.register_get_direct_mem_ptr(this, &Interconnect::get_direct_mem_ptr);
  from_children.register_transport_dbg(this, &Interconnect::transport_dbg);
}

int Interconnect::route(tlm::tlm_generic_payload& gp) {
  auto* ext = gp.get_extension<TransferExtension>();
  FRACSIM_ASSERT(ext && ext->route >= 0 && ext->route < static_cast<int>(to_parents.size()),
                 "{}: a transfer without a valid route", name());
  return ext->route;
}

tlm::tlm_sync_enum Interconnect::nb_transport_fw(int, tlm::tlm_generic_payload& gp,
                                                 tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  return to_parents[route(gp)]->nb_transport_fw(gp, phase, delay);
}

// Folded runs are timing runs: there is no data to reach directly.
bool Interconnect::get_direct_mem_ptr(int, tlm::tlm_generic_payload&, tlm::tlm_dmi&) {
  return false;
}

unsigned int Interconnect::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  return gp.get_extension<TransferExtension>() ? to_parents[route(gp)]->transport_dbg(gp) : 0;
}

}  // namespace fracsim::sim
