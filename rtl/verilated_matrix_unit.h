// Adapts one Verilated matrix_unit class (any ROWS x COLS) to MatrixUnitPort. Include it only in
// a file that includes verilated.h (and verilated_vcd_c.h when Traced, verilated_cov.h when
// Covered) and the class's header first.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "rtl/matrix_unit_port.h"
#include "rtl/verilated_model.h"

namespace fracsim::rtl {

template <typename V, bool Traced = false, bool Covered = false>
class VerilatedMatrixUnit : public VerilatedPort<MatrixUnitPort, V, Traced, Covered> {
  using VerilatedPort<MatrixUnitPort, V, Traced, Covered>::top_;

 public:
  VerilatedMatrixUnit(int rows, int cols) : rows_(rows), cols_(cols) {}
  [[nodiscard]] int rows() const override { return rows_; }
  [[nodiscard]] int cols() const override { return cols_; }

  void reset() override { top_.pulse_reset(); }

  MatrixUnitOutputs cycle(const MatrixUnitInputs& in, int32_t* result) override {
    top_->clk = 0;
    top_->in_valid = in.in_valid;
    top_->in_first = in.in_first;
    top_->in_last = in.in_last;
    top_->in_i16 = in.in_i16;
    top_->out_ready = in.out_ready;
    if (in.in_valid) {
      pins::put_lanes16(top_->in_a, in.a, rows_);
      pins::put_lanes16(top_->in_b, in.b, cols_);
    }
    top_.eval();
    MatrixUnitOutputs o{top_->in_ready != 0, top_->out_valid != 0};
    if (o.out_valid && in.out_ready) pins::get_lanes32(top_->out_data, result, rows_ * cols_);
    top_->clk = 1;
    top_.eval();
    return o;
  }

 private:
  int rows_, cols_;
};

}  // namespace fracsim::rtl
