// The vector unit's checker (`fracsim verify --unit vector`): directed and constrained-random
// integer eltwise, activation and reduce vectors through the Verilated unit and through the
// reference semantics side by side. Results must agree bit for bit; cycles must equal the C++
// unit model's formula (the `cycles` of isa/ops/eltwise.yaml, activation.yaml, reduce.yaml) plus
// the cycles the result stream was held back.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "rtl/vector_unit_port.h"
#include "rtl/verify_loop.h"

namespace fracsim::rtl {

// Runs the vectors on one unit made by `make_unit` (reset before each vector). On the first
// mismatch prints the vector's inputs, the expected and the seen values, reruns it on a unit
// made by `make_traced` (may be empty: no wave) writing options.wave, and returns passed = false.
UnitVerifyReport verify_vector_unit(const VectorUnitFactory& make_unit,
                                    const VectorUnitFactory& make_traced,
                                    const UnitVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
