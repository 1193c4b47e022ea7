// Adapts one Verilated vector_unit class (any LANES) to VectorUnitPort. Include it only in a file
// that includes verilated.h (and verilated_vcd_c.h when Traced, verilated_cov.h when Covered)
// and the class's header first.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "rtl/vector_unit_port.h"
#include "rtl/verilated_model.h"

namespace fracsim::rtl {

template <typename V, bool Traced = false, bool Covered = false>
class VerilatedVectorUnit : public VerilatedPort<VectorUnitPort, V, Traced, Covered> {
  using VerilatedPort<VectorUnitPort, V, Traced, Covered>::top_;

 public:
  explicit VerilatedVectorUnit(int lanes) : lanes_(lanes) {}
  [[nodiscard]] int lanes() const override { return lanes_; }

  void reset() override { top_.pulse_reset(); }

  VectorUnitOutputs cycle(const VectorUnitInputs& in, int32_t* result) override {
    top_->clk = 0;
    top_->in_valid = in.in_valid;
    top_->out_ready = in.out_ready;
    top_->in_op = static_cast<uint8_t>(in.op);
    top_->in_dtype = static_cast<uint8_t>(in.dtype);
    top_->in_alpha = in.alpha_q16;
    top_->in_lane_valid =
        static_cast<std::remove_reference_t<decltype(top_->in_lane_valid)>>(in.lane_valid);
    top_->in_seg_first =
        static_cast<std::remove_reference_t<decltype(top_->in_seg_first)>>(in.seg_first);
    for (int l = 0; l < lanes_; ++l) {
      const auto i = static_cast<size_t>(l);
      top_->in_a[i] = in.a ? static_cast<uint32_t>(in.a[l]) : 0u;
      top_->in_b[i] = in.b ? static_cast<uint32_t>(in.b[l]) : 0u;
    }
    top_.eval();
    VectorUnitOutputs o{top_->in_ready != 0, top_->out_valid != 0};
    if (o.out_valid && in.out_ready) pins::get_lanes32(top_->out_data, result, lanes_);
    top_->clk = 1;
    top_.eval();
    return o;
  }

 private:
  int lanes_;
};

}  // namespace fracsim::rtl
