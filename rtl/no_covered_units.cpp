// The leaf units of a build without coverage instrumentation (FRACSIM_RTL_COVERAGE=OFF): none.
#include "rtl/matrix_unit_port.h"
#include "rtl/sort_unit_port.h"
#include "rtl/unit_coverage.h"
#include "rtl/vector_unit_port.h"

namespace fracsim::rtl {

std::string covered_matrix_size() { return ""; }
int covered_vector_lanes() { return 0; }
int covered_sort_width() { return 0; }
std::unique_ptr<MatrixUnitPort> make_covered_matrix_unit(int, int) { return nullptr; }
std::unique_ptr<VectorUnitPort> make_covered_vector_unit(int) { return nullptr; }
std::unique_ptr<SortUnitPort> make_covered_sort_unit(int) { return nullptr; }

}  // namespace fracsim::rtl
