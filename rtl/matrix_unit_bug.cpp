#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vmatrix_unit_bug.h"
#include "rtl/matrix_unit_bug.h"
#include "rtl/verilated_matrix_unit.h"

namespace fracsim::rtl {

std::unique_ptr<MatrixUnitPort> make_buggy_matrix_unit() {
  return std::make_unique<VerilatedMatrixUnit<Vmatrix_unit_bug, true>>(4, 4);
}

}  // namespace fracsim::rtl
