// An 8-lane vector unit built with FRACSIM_VECTOR_BUG (its i8 saturation stops at -127): a wrong
// RTL that only the checker's own test links, to prove it is caught. Traced: trace_to works.
#pragma once

#include <memory>

#include "rtl/vector_unit_port.h"

namespace fracsim::rtl {

std::unique_ptr<VectorUnitPort> make_buggy_vector_unit();

}  // namespace fracsim::rtl
