#include "rtl/rtl_backend.h"

#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "rtl/matrix_bridge.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {
namespace {

bool is_integer_matmul(const isa::OpDef& op, const isa::Instruction& instr) {
  if (op.name != "matmul" || instr.operands.empty()) return false;
  const isa::DType dt = instr.operands[0].dtype;
  return dt == isa::DType::i8 || dt == isa::DType::i16;
}

class RtlLeafUnit : public sim::LeafUnit {
 public:
  explicit RtlLeafUnit(const sim::LevelSpec& leaf) : matrix_(leaf.matrix) {
    sim::LevelSpec model = leaf;
    model.backend = "model";
    model_ = sim::make_leaf_unit(model);
    // Fail at construction, not in the middle of a run, when an array size was not Verilated.
    for (isa::DType dt : {isa::DType::i8, isa::DType::i16}) bridge_for(dt);
  }

  uint64_t run(const isa::OpDef& op, const isa::Instruction& instr, isa::MemoryView* mem) override {
    if (!is_integer_matmul(op, instr)) return model_->run(op, instr, mem);
    return bridge_for(instr.operands[0].dtype).run_instruction(op, instr, mem).cycles;
  }

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
  std::unique_ptr<sim::LeafUnit> model_;                 // every op but integer matmul
  std::map<std::pair<int, int>, MatrixBridge> bridges_;  // by array size
};

}  // namespace

void register_backends() {
  sim::register_leaf_backend(
      "rtl", [](const sim::LevelSpec& leaf) { return std::make_unique<RtlLeafUnit>(leaf); });
}

}  // namespace fracsim::rtl
