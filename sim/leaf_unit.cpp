#include "sim/leaf_unit.h"

#include <map>

#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/extension.h"

namespace fracsim::sim {
namespace {

// The C++ unit model: reference semantics for the data, the op's `cycles` formula (from
// isa/ops/*.yaml) over its dims and the leaf's unit parameters for the time.
class ModelLeafUnit : public LeafUnit {
 public:
  explicit ModelLeafUnit(const LevelSpec& leaf)
      : matrix_(leaf.matrix), params_(unit_parameter_values(leaf)) {}

  uint64_t run(const isa::OpDef& op, const isa::Instruction& instr, isa::MemoryView* mem) override {
    if (mem) isa::execute_reference(op, instr, *mem);
    return cycles(op, instr);
  }

 private:
  // An extension op's piece takes the cycles of its primitive steps, one after another.
  uint64_t cycles(const isa::OpDef& op, const isa::Instruction& instr) {
    if (op.is_extension()) {
      const isa::Expansion x = isa::expand_sequence(op, instr);
      uint64_t total = 0;
      for (size_t s = 0; s < x.steps.size(); ++s) total += cycles(*x.step_ops[s], x.steps[s]);
      return total;
    }
    if (op.unit == "matrix" && !instr.operands.empty()) {
      // The MAC array's shape depends on the input dtype (narrow integers pack more MACs).
      const MatrixShape m = matrix_.for_dtype(instr.operands[0].dtype);
      params_["rows"] = m.rows;
      params_["cols"] = m.cols;
    }
    return unit_cycles(op, instr, params_);
  }

 private:
  MatrixUnitSpec matrix_;
  std::map<std::string, int64_t> params_;
};

std::map<std::string, LeafUnitFactory>& registry() {
  static std::map<std::string, LeafUnitFactory> r = {
      {"model", [](const LevelSpec& l) { return std::make_unique<ModelLeafUnit>(l); }}};
  return r;
}

}  // namespace

std::map<std::string, int64_t> unit_parameter_values(const LevelSpec& leaf) {
  return {{"rows", leaf.matrix.rows},
          {"cols", leaf.matrix.cols},
          {"lanes", leaf.vector.lanes},
          {"width", leaf.sort.width}};
}

uint64_t unit_cycles(const isa::OpDef& op, const isa::Instruction& instr,
                     const std::map<std::string, int64_t>& unit_params) {
  std::map<std::string, int64_t> vars = isa::bind_dims(op, instr, op.name);
  int64_t elements = 1;
  for (int64_t e : isa::dim_extents(op, instr)) elements *= e;
  if (elements == 0) return 0;  // an empty piece takes no time
  vars.insert(unit_params.begin(), unit_params.end());
  const int64_t c = op.cycles.eval(vars);
  FRACSIM_ASSERT(c >= 0, "op {}: cycles formula gave {}", op.name, c);
  return static_cast<uint64_t>(c);
}

void register_leaf_backend(const std::string& name, LeafUnitFactory factory) {
  registry()[name] = std::move(factory);
}

std::unique_ptr<LeafUnit> make_leaf_unit(const LevelSpec& leaf) {
  auto it = registry().find(leaf.backend);
  if (it == registry().end())
    throw ConfigError(
        fmt::format("leaf backend '{}' is not available in this build", leaf.backend));
  return it->second(leaf);
}

}  // namespace fracsim::sim
