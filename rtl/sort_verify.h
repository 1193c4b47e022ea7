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

struct SortVerifyOptions {
  int64_t vectors = 1000;
  uint64_t seed = 1;
  std::string wave;      // when set, a VCD of the first failing vector
  std::string coverage;  // when set, the unit's coverage counts are written here at the end
};

using SortVerifyReport = UnitVerifyReport;

SortVerifyReport verify_sort_unit(const SortUnitFactory& make_unit,
                                  const SortUnitFactory& make_traced,
                                  const SortVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
