// The routing between one level's DMA engines and the memories of the level above, used when
// folding: then a small pool of simulated nodes plays whichever nodes each level needs, so a
// simulated node's parent changes from job to job. Each transfer names the parent memory it is
// for (TransferExtension::route); routing takes no time (the link's time is the DMA engine's
// and the memory's). Unfolded runs bind each DMA engine straight to its parent's memory.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

namespace fracsim::sim {

class Interconnect : public sc_core::sc_module {
 public:
  explicit Interconnect(const sc_core::sc_module_name& name);

  tlm_utils::multi_passthrough_target_socket<Interconnect> from_children;  // DMA engines
  tlm_utils::multi_passthrough_initiator_socket<Interconnect> to_parents;  // parent memories

 private:
  tlm::tlm_sync_enum nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  int route(tlm::tlm_generic_payload& gp);
};

}  // namespace fracsim::sim
