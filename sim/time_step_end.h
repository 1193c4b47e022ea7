// Decisions that must not depend on the order in which the kernel runs the processes of one
// time step. That order follows the order of events in the kernel's queues, which folding
// changes (it runs other processes); a decision that reads state other processes change at the
// same time would then differ between folded and unfolded runs. Such a decision waits here
// until nothing else is pending at the current time; the waiters then run one at a time, in the
// order of their keys, each once the activity of the one before has settled.
#pragma once

#include <cstdint>
#include <map>

#include <systemc>

namespace fracsim::sim {

class TimeStepEnd : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(TimeStepEnd);
  explicit TimeStepEnd(sc_core::sc_module_name name);
  // Notifies `e` in a delta cycle of the current time, once the time step has settled and the
  // waiters of lower key have run. A key waits once at a time.
  void wait(uint64_t key, sc_core::sc_event& e);

 private:
  void step();

  std::map<uint64_t, sc_core::sc_event*> waiting_;
  sc_core::sc_event kick_;
};

}  // namespace fracsim::sim
