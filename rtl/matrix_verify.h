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

// Runs the vectors on one unit made by `make_unit` (one Verilated model, reset before each
// vector). On the first mismatch prints the vector's inputs, the expected and the seen values,
// reruns it on a unit made by `make_traced` (may be empty: no wave) writing options.wave, and
// returns passed = false. With options.coverage, writes the unit's coverage at the end (a
// coverage-instrumented unit: report.coverage_written).
UnitVerifyReport verify_matrix_unit(const MatrixUnitFactory& make_unit,
                                    const MatrixUnitFactory& make_traced,
                                    const UnitVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
