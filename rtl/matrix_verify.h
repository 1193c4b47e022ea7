// The matrix unit's checker (`fracsim verify --unit matrix`): directed and constrained-random
// matmul vectors through the Verilated unit and through the reference semantics side by side.
// Results must agree bit for bit; cycles must equal the C++ unit model's formula (the `cycles`
// of isa/ops/matmul.yaml) plus the cycles the result stream was held back.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "rtl/matrix_unit_port.h"
#include "rtl/verify_loop.h"

namespace fracsim::rtl {

struct MatrixVerifyOptions {
  int64_t vectors = 1000;  // random vectors, after the directed set
  uint64_t seed = 1;
  std::string wave;      // when set, a VCD of the first failing vector is written here
  std::string coverage;  // when set, the unit's coverage counts are written here at the end
};

using MatrixVerifyReport = UnitVerifyReport;

// Runs the vectors on one unit made by `make_unit` (one Verilated model, reset before each
// vector). On the first mismatch prints the vector's inputs, the expected and the seen values,
// reruns it on a unit made by `make_traced` (may be empty: no wave) writing options.wave, and
// returns passed = false. With options.coverage, writes the unit's coverage at the end (a
// coverage-instrumented unit: report.coverage_written).
MatrixVerifyReport verify_matrix_unit(const MatrixUnitFactory& make_unit,
                                      const MatrixUnitFactory& make_traced,
                                      const MatrixVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
