#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vsort_unit_bug.h"
#include "rtl/sort_unit_bug.h"
#include "rtl/verilated_sort_unit.h"

namespace fracsim::rtl {

std::unique_ptr<SortUnitPort> make_buggy_sort_unit() {
  return std::make_unique<VerilatedSortUnit<Vsort_unit_bug, true>>(4);
}

}  // namespace fracsim::rtl
