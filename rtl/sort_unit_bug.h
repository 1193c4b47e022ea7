// A width-4 sort unit built with FRACSIM_SORT_BUG (it compares keys as unsigned numbers): a
// wrong RTL that only the checker's own test links, to prove it is caught. Traced.
#pragma once

#include <memory>

#include "rtl/sort_unit_port.h"

namespace fracsim::rtl {

std::unique_ptr<SortUnitPort> make_buggy_sort_unit();

}  // namespace fracsim::rtl
