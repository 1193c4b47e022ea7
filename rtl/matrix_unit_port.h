// One Verilated matrix unit (rtl/matrix_unit.sv) seen through its pins, clock by clock. The
// bridge drives any array size (and the checker's deliberately wrong build) through this one
// interface; rtl/verilated_matrix_unit.h adapts each Verilated class to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rtl/unit_port.h"

namespace fracsim::rtl {

// The inputs of one clock cycle. `a` holds rows() lanes, `b` cols() lanes (int8 values in int16).
struct MatrixUnitInputs {
  bool in_valid = false;
  bool in_first = false;
  bool in_last = false;
  bool in_i16 = false;
  bool out_ready = true;
  const int16_t* a = nullptr;
  const int16_t* b = nullptr;
};

// What the unit showed during that cycle, before the clock edge.
struct MatrixUnitOutputs {
  bool in_ready = false;
  bool out_valid = false;
};

class MatrixUnitPort : public UnitPort {
 public:
  [[nodiscard]] virtual int rows() const = 0;
  [[nodiscard]] virtual int cols() const = 0;
  // One cycle: drives `in`, evaluates, samples the handshakes and, when a result beat is taken
  // (out_valid && out_ready), copies its rows()*cols() lanes to `result`; then the clock edge.
  virtual MatrixUnitOutputs cycle(const MatrixUnitInputs& in, int32_t* result) = 0;
};

using MatrixUnitFactory = std::function<std::unique_ptr<MatrixUnitPort>()>;

// The array sizes built into this binary (CMake's FRACSIM_RTL_MATRIX_SIZES), as "RxC".
std::vector<std::string> built_matrix_sizes();
// The Verilated unit of that size, or null when it was not built.
std::unique_ptr<MatrixUnitPort> make_matrix_unit(int rows, int cols);
// The same unit built with --trace (CMake's FRACSIM_RTL_MATRIX_TRACED_SIZES), or null.
std::unique_ptr<MatrixUnitPort> make_traced_matrix_unit(int rows, int cols);
// The same unit built with --coverage (rtl/CMakeLists.txt, FRACSIM_RTL_COVERAGE), or null. One
// coverage-instrumented unit at a time: its points are the context's until it is destroyed.
std::unique_ptr<MatrixUnitPort> make_covered_matrix_unit(int rows, int cols);

}  // namespace fracsim::rtl
