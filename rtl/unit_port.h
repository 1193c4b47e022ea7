// What every leaf unit's port offers besides its own pins: reset, a waveform of later cycles,
// and the coverage counts of an instrumented build.
#pragma once

#include <string>

namespace fracsim::rtl {

class UnitPort {
 public:
  virtual ~UnitPort() = default;
  // Returns the unit to its reset state (a clocked unit holds reset for one clock edge with its
  // inputs idle).
  virtual void reset() = 0;
  // Starts writing a waveform (VCD) of every later cycle to `path`; false when this build of the
  // unit has no tracing.
  virtual bool trace_to(const std::string& path) {
    (void)path;
    return false;
  }
  // Writes the coverage counts gathered so far to `path` (a verilator_coverage data file); false
  // when this build of the unit is not coverage-instrumented.
  virtual bool write_coverage(const std::string& path) {
    (void)path;
    return false;
  }
};

}  // namespace fracsim::rtl
