// The sort unit's checker (`fracsim verify --unit sort`): directed and random integer merge
// vectors (runs 1 or 2) through the Verilated unit and the reference semantics side by side;
// results bit for bit, cycles equal to merge's `cycles` formula (isa/ops/merge.yaml) plus stalls.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "rtl/sort_unit_port.h"
#include "rtl/verify_loop.h"

namespace fracsim::rtl {

UnitVerifyReport verify_sort_unit(const SortUnitFactory& make_unit,
                                  const SortUnitFactory& make_traced,
                                  const UnitVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
