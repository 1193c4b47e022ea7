// The matrix unit's checker (`fracsim verify --unit matrix`): directed and constrained-random
// matmul vectors through the Verilated unit and through the reference semantics side by side.
// Results must agree bit for bit; cycles must equal the C++ unit model's formula (the `cycles`
// of isa/ops/matmul.yaml) plus the cycles the result stream was held back.
#pragma once

#include <cstdint>
#include <ostream>

#include "rtl/matrix_unit_port.h"
#include "rtl/verify_loop.h"

namespace fracsim::rtl {

struct MatrixVerifyOptions {
  int64_t vectors = 1000;  // random vectors, after the directed set
  uint64_t seed = 1;
};

using MatrixVerifyReport = UnitVerifyReport;

// Runs the vectors on one unit made by `make_unit` (one Verilated model, reset before each
// vector). Prints one line per mismatch-free run at the end; on the first mismatch prints the
// vector's inputs, the expected and the seen values, and returns passed = false.
MatrixVerifyReport verify_matrix_unit(const MatrixUnitFactory& make_unit,
                                      const MatrixVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
