#include "sim/time_step_end.h"

#include "isa/error.h"

namespace fracsim::sim {

TimeStepEnd::TimeStepEnd(sc_core::sc_module_name name) : sc_core::sc_module(name) {
  SC_METHOD(step);
  sensitive << kick_;
  dont_initialize();
}

void TimeStepEnd::wait(uint64_t key, sc_core::sc_event& e) {
  const bool fresh = waiting_.emplace(key, &e).second;
  FRACSIM_ASSERT(fresh, "{}: key {} is already waiting", name(), key);
  kick_.notify(sc_core::SC_ZERO_TIME);
}

void TimeStepEnd::step() {
  if (waiting_.empty()) return;
  // Only this process re-arms itself while others are pending, so the time step settles.
  if (!sc_core::sc_pending_activity_at_current_time()) {
    auto first = waiting_.begin();
    first->second->notify(sc_core::SC_ZERO_TIME);
    waiting_.erase(first);
    if (waiting_.empty()) return;
  }
  kick_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace fracsim::sim
