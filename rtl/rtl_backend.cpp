#include "rtl/rtl_backend.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "rtl/matrix_bridge.h"
#include "rtl/sort_bridge.h"
#include "rtl/vector_bridge.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {
namespace {

class RtlLeafUnit : public sim::LeafUnit {
 public:
  explicit RtlLeafUnit(const sim::LevelSpec& leaf) : matrix_(leaf.matrix) {
    std::unique_ptr<VectorUnitPort> vu = make_vector_unit(leaf.vector.lanes);
    if (!vu) {
      std::string built;
      for (int l : built_vector_lanes()) built += (built.empty() ? "" : ", ") + std::to_string(l);
      throw ConfigError(fmt::format(
          "backend rtl: no {}-lane vector unit in this build (built: {}; add the lane count to "
          "the CMake option FRACSIM_RTL_VECTOR_LANES)",
          leaf.vector.lanes, built));
    }
    vector_ = std::make_unique<VectorBridge>(std::move(vu));
    std::unique_ptr<SortUnitPort> su = make_sort_unit(leaf.sort.width);
    if (!su) {
      std::string built;
      for (int w : built_sort_widths()) built += (built.empty() ? "" : ", ") + std::to_string(w);
      throw ConfigError(fmt::format(
          "backend rtl: no width-{} sort unit in this build (built: {}; add the width to the "
          "CMake option FRACSIM_RTL_SORT_WIDTHS)",
          leaf.sort.width, built));
    }
    sort_ = std::make_unique<SortBridge>(std::move(su));
    sim::LevelSpec model = leaf;
    model.backend = "model";
    model_ = sim::make_leaf_unit(model);
    // Fail at construction, not in the middle of a run, when an array size was not Verilated.
    for (isa::DType dt : {isa::DType::i8, isa::DType::i16}) bridge_for(dt);
  }

  uint64_t run(const isa::OpDef& op, const isa::Instruction& instr, isa::MemoryView* mem) override {
    last_ = std::nullopt;
    if (vector_unit_runs(op, instr)) {
      last_ = sim::Counter::rtl_vector_instructions;
      return vector_->run_instruction(op, instr, mem).cycles;
    }
    if (sort_unit_runs(op, instr)) {
      last_ = sim::Counter::rtl_sort_instructions;
      return sort_->run_instruction(op, instr, mem).cycles;
    }
    if (!matrix_unit_runs(op, instr)) return model_->run(op, instr, mem);
    last_ = sim::Counter::rtl_matrix_instructions;
    MatrixBridge& bridge = bridge_for(instr.operands[0].dtype);
    return (op.name == "matmul" ? bridge.run_instruction(op, instr, mem)
                                : bridge.run_conv_instruction(op, instr, mem))
        .cycles;
  }

  [[nodiscard]] std::optional<sim::Counter> last_rtl_unit() const override { return last_; }

 private:
  MatrixBridge& bridge_for(isa::DType dt) {
    const sim::MatrixShape s = matrix_.for_dtype(dt);
    auto key = std::make_pair(s.rows, s.cols);
    auto it = bridges_.find(key);
    if (it == bridges_.end()) {
      std::unique_ptr<MatrixUnitPort> unit = make_matrix_unit(s.rows, s.cols);
      if (!unit)
        throw ConfigError(fmt::format(
            "backend rtl: no {}x{} matrix unit (for {}) in this build (built: {}; add the size "
            "to the CMake option FRACSIM_RTL_MATRIX_SIZES)",
            s.rows, s.cols, isa::dtype_name(dt), fmt::join(built_matrix_sizes(), ", ")));
      it = bridges_.emplace(key, MatrixBridge(std::move(unit))).first;
    }
    return it->second;
  }

  sim::MatrixUnitSpec matrix_;
  std::unique_ptr<VectorBridge> vector_;                 // integer eltwise, activation, reduce
  std::unique_ptr<SortBridge> sort_;                     // integer merge of 1 or 2 runs
  std::unique_ptr<sim::LeafUnit> model_;                 // every other op
  std::map<std::pair<int, int>, MatrixBridge> bridges_;  // by array size
  std::optional<sim::Counter> last_;                     // the unit of the last instruction
};

}  // namespace

void register_backends() {
  sim::register_leaf_backend(
      "rtl", [](const sim::LevelSpec& leaf) { return std::make_unique<RtlLeafUnit>(leaf); });
}

}  // namespace fracsim::rtl
