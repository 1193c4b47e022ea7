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

namespace fracsim::rtl {

struct VectorVerifyOptions {
  int64_t vectors = 1000;  // random vectors, after the directed set
  uint64_t seed = 1;
  std::string wave;  // when set, a VCD of the first failing vector is written here
};

struct VectorVerifyReport {
  bool passed = true;
  int64_t directed = 0;
  int64_t random = 0;
  int64_t stalled_vectors = 0;  // vectors run with back-pressure on the result stream
  uint64_t rtl_cycles = 0;
  uint64_t stall_cycles = 0;
  double rtl_seconds = 0;
  bool wave_written = false;
};

// Runs the vectors on one unit made by `make_unit` (reset before each vector). On the first
// mismatch prints the vector's inputs, the expected and the seen values, reruns it on a unit
// made by `make_traced` (may be empty: no wave) writing options.wave, and returns passed = false.
VectorVerifyReport verify_vector_unit(const VectorUnitFactory& make_unit,
                                      const VectorUnitFactory& make_traced,
                                      const VectorVerifyOptions& options, std::ostream& out);

}  // namespace fracsim::rtl
