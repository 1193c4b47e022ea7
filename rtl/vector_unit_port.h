// One Verilated vector unit (rtl/vector_unit.sv) seen through its pins, clock by clock. The
// bridge drives any lane count (and the checker's deliberately wrong build) through this one
// interface; rtl/verilated_vector_unit.h adapts each Verilated class to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rtl/unit_port.h"

namespace fracsim::rtl {

// in_op of rtl/vector_unit.sv.
enum class VectorOp : uint8_t {
  add = 0,
  sub = 1,
  mul = 2,
  max = 3,
  min = 4,
  relu = 5,
  leaky_relu = 6,
  reduce_sum = 7,
  reduce_max = 8,
  reduce_min = 9
};
// in_dtype of rtl/vector_unit.sv.
enum class VectorDType : uint8_t { i8 = 0, i16 = 1, i32 = 2 };

// The inputs of one clock cycle. `a` and `b` hold lanes() values (sign-extended to 32 bits);
// bit l of lane_valid / seg_first is lane l's flag.
struct VectorUnitInputs {
  bool in_valid = false;
  bool out_ready = true;
  VectorOp op = VectorOp::add;
  VectorDType dtype = VectorDType::i32;
  uint32_t alpha_q16 = 0;  // leaky_relu's slope * 65536, 0..65536
  uint64_t lane_valid = 0;
  uint64_t seg_first = 0;
  const int32_t* a = nullptr;
  const int32_t* b = nullptr;
};

// What the unit showed during that cycle, before the clock edge.
struct VectorUnitOutputs {
  bool in_ready = false;
  bool out_valid = false;
};

class VectorUnitPort : public UnitPort {
 public:
  [[nodiscard]] virtual int lanes() const = 0;
  // One cycle: drives `in`, evaluates, samples the handshakes and, when a result beat is taken
  // (out_valid && out_ready), copies its lanes() lanes to `result`; then the clock edge.
  virtual VectorUnitOutputs cycle(const VectorUnitInputs& in, int32_t* result) = 0;
};

using VectorUnitFactory = std::function<std::unique_ptr<VectorUnitPort>()>;

// The lane counts built into this binary (CMake's FRACSIM_RTL_VECTOR_LANES).
std::vector<int> built_vector_lanes();
// The Verilated unit with that many lanes, or null when it was not built.
std::unique_ptr<VectorUnitPort> make_vector_unit(int lanes);
// The same unit built with --trace (trace_to works), or null when it was not built.
std::unique_ptr<VectorUnitPort> make_traced_vector_unit(int lanes);
// The same unit built with --coverage (rtl/CMakeLists.txt, FRACSIM_RTL_COVERAGE), or null. One
// coverage-instrumented unit at a time: its points are the context's until it is destroyed.
std::unique_ptr<VectorUnitPort> make_covered_vector_unit(int lanes);

}  // namespace fracsim::rtl
