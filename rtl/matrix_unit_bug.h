// A 4x4 matrix unit built with FRACSIM_MATRIX_BUG (its accumulators drop the carry from bit 15
// to bit 16): a wrong RTL that only the checker's own test links, to prove it is caught. Traced:
// trace_to works.
#pragma once

#include <memory>

#include "rtl/matrix_unit_port.h"

namespace fracsim::rtl {

std::unique_ptr<MatrixUnitPort> make_buggy_matrix_unit();

}  // namespace fracsim::rtl
