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

namespace pins {

// Packs `lanes` 16-bit lanes into a Verilated port (an integer up to 64 bits, or a VlWide).
template <typename Port>
void put_lanes16(Port& port, const int16_t* v, int lanes) {
  if constexpr (std::is_integral_v<Port>) {
    uint64_t x = 0;
    for (int i = 0; i < lanes; ++i)
      x |= static_cast<uint64_t>(static_cast<uint16_t>(v[i])) << (16 * i);
    port = static_cast<Port>(x);
  } else {
    for (int i = 0; i < lanes; i += 2) {
      uint32_t w = static_cast<uint16_t>(v[i]);
      if (i + 1 < lanes) w |= static_cast<uint32_t>(static_cast<uint16_t>(v[i + 1])) << 16;
      port[i / 2] = w;
    }
  }
}

// Copies `lanes` 32-bit lanes from a Verilated unpacked array port (VlUnpacked<IData, N>).
template <typename Port>
void get_lanes32(const Port& port, int32_t* out, int lanes) {
  for (int i = 0; i < lanes; ++i) out[i] = static_cast<int32_t>(port[static_cast<size_t>(i)]);
}

}  // namespace pins

template <typename V, bool Traced = false, bool Covered = false>
class VerilatedMatrixUnit : public MatrixUnitPort {
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
    eval();
    MatrixUnitOutputs o{top_->in_ready != 0, top_->out_valid != 0};
    if (o.out_valid && in.out_ready) pins::get_lanes32(top_->out_data, result, rows_ * cols_);
    top_->clk = 1;
    eval();
    return o;
  }

  bool trace_to(const std::string& path) override { return top_.trace_to(path); }

  bool write_coverage(const std::string& path) override { return top_.write_coverage(path); }

 private:
  void eval() { top_.eval(); }

  int rows_, cols_;
  VerilatedModel<V, Traced, Covered> top_;
};

}  // namespace fracsim::rtl
