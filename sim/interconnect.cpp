#include "sim/interconnect.h"

#include "isa/error.h"
#include "sim/memory.h"

namespace fracsim::sim {

Interconnect::Interconnect(const sc_core::sc_module_name& name)
    : sc_module(name), from_children("from_children"), to_parents("to_parents") {
  from_children.register_b_transport(this, &Interconnect::b_transport);
  from_children.register_get_direct_mem_ptr(this, &Interconnect::get_direct_mem_ptr);
  from_children.register_transport_dbg(this, &Interconnect::transport_dbg);
}

int Interconnect::route(tlm::tlm_generic_payload& gp) {
  auto* ext = gp.get_extension<TransferExtension>();
  FRACSIM_ASSERT(ext && ext->route >= 0 && ext->route < static_cast<int>(to_parents.size()),
                 "{}: a transfer without a valid route", name());
  return ext->route;
}

void Interconnect::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  to_parents[route(gp)]->b_transport(gp, delay);
}

// Folded runs are timing runs: there is no data to reach directly.
bool Interconnect::get_direct_mem_ptr(int, tlm::tlm_generic_payload&, tlm::tlm_dmi&) {
  return false;
}

unsigned int Interconnect::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  return gp.get_extension<TransferExtension>() ? to_parents[route(gp)]->transport_dbg(gp) : 0;
}

}  // namespace fracsim::sim
