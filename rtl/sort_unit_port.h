// One Verilated sort (merge) unit (rtl/sort_unit.sv) seen through its pins, beat by beat; the
// bridge drives every width (and the checker's deliberately wrong build) through it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rtl/unit_port.h"

namespace fracsim::rtl {

// The inputs of one cycle: windows of width() elements at the heads of runs A and B.
struct SortUnitInputs {
  bool in_valid = false;
  bool out_ready = true;
  bool descending = false;
  const int32_t* a = nullptr;
  int a_count = 0;
  const int32_t* b = nullptr;
  int b_count = 0;
  int emit = 0;
};

struct SortUnitOutputs {
  bool in_ready = false;
  bool out_valid = false;
  int take_a = 0;  // of the emitted outputs, how many came from run A
};

class SortUnitPort : public UnitPort {
 public:
  [[nodiscard]] virtual int width() const = 0;
  // One cycle: drives `in`, evaluates and, when a result beat is taken, copies its width()
  // lanes to `result`.
  virtual SortUnitOutputs cycle(const SortUnitInputs& in, int32_t* result) = 0;
};

using SortUnitFactory = std::function<std::unique_ptr<SortUnitPort>()>;

// The widths built into this binary (CMake's FRACSIM_RTL_SORT_WIDTHS).
std::vector<int> built_sort_widths();
std::unique_ptr<SortUnitPort> make_sort_unit(int width);
std::unique_ptr<SortUnitPort> make_traced_sort_unit(int width);
// The same unit built with --coverage (rtl/CMakeLists.txt, FRACSIM_RTL_COVERAGE), or null. One
// coverage-instrumented unit at a time: its points are the context's until it is destroyed.
std::unique_ptr<SortUnitPort> make_covered_sort_unit(int width);

}  // namespace fracsim::rtl
