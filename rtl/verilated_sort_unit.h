// Adapts one Verilated sort_unit class (any WIDTH) to SortUnitPort. Include it only in a file
// that includes verilated.h, verilated_vcd_c.h (and verilated_cov.h when Covered) and the
// class's header first.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "rtl/sort_unit_port.h"
#include "rtl/verilated_model.h"

namespace fracsim::rtl {

template <typename V, bool Traced = false, bool Covered = false>
class VerilatedSortUnit : public VerilatedPort<SortUnitPort, V, Traced, Covered> {
  using VerilatedPort<SortUnitPort, V, Traced, Covered>::top_;

 public:
  explicit VerilatedSortUnit(int width) : width_(width) {}
  [[nodiscard]] int width() const override { return width_; }
  void reset() override {}  // the unit holds no state: nothing to clear

  SortUnitOutputs cycle(const SortUnitInputs& in, int32_t* result) override {
    using Count = std::remove_reference_t<decltype(top_->in_emit)>;
    top_->in_valid = in.in_valid;
    top_->out_ready = in.out_ready;
    top_->in_descending = in.descending;
    top_->in_a_count = static_cast<Count>(in.a_count);
    top_->in_b_count = static_cast<Count>(in.b_count);
    top_->in_emit = static_cast<Count>(in.emit);
    for (int l = 0; l < width_; ++l) {
      const auto i = static_cast<size_t>(l);
      top_->in_a[i] = l < in.a_count ? static_cast<uint32_t>(in.a[l]) : 0u;
      top_->in_b[i] = l < in.b_count ? static_cast<uint32_t>(in.b[l]) : 0u;
    }
    top_.eval();
    SortUnitOutputs o{top_->in_ready != 0, top_->out_valid != 0,
                      static_cast<int>(top_->out_take_a)};
    if (o.out_valid && in.out_ready) pins::get_lanes32(top_->out_data, result, width_);
    return o;
  }

 private:
  int width_;
};

}  // namespace fracsim::rtl
