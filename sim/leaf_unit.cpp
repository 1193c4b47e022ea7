#include "sim/leaf_unit.h"

#include <map>
#include <vector>

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
  // The cycles of a piece depend on its op, attributes, dtypes and shapes only (the formulas
  // read dims and attributes; the MAC array's shape follows the input dtype): each distinct
  // piece is priced once. A large run's leaves run the same few piece shapes many times, and a
  // formula's evaluation binds every dim by name.
  uint64_t cycles(const isa::OpDef& op, const isa::Instruction& instr) {
    std::vector<int64_t> key = piece_key(instr);
    auto it = priced_.find(key);
    if (it == priced_.end()) it = priced_.emplace(std::move(key), price(op, instr)).first;
    return it->second;
  }

  // An extension op's piece takes the cycles of its primitive steps, one after another.
  uint64_t price(const isa::OpDef& op, const isa::Instruction& instr) {
    if (op.is_extension()) {
      const isa::Expansion x = isa::expand_sequence(op, instr);
      uint64_t total = 0;
      for (size_t s = 0; s < x.steps.size(); ++s) total += price(*x.step_ops[s], x.steps[s]);
      return total;
    }
    if (op.unit == isa::UnitKind::matrix && !instr.operands.empty()) {
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
  std::map<std::vector<int64_t>, uint64_t> priced_;  // piece key -> cycles
};

std::map<std::string, LeafUnitFactory>& registry() {
  static std::map<std::string, LeafUnitFactory> r = {
      {"model", [](const LevelSpec& l) { return std::make_unique<ModelLeafUnit>(l); }}};
  return r;
}

}  // namespace

std::vector<int64_t> piece_key(const isa::Instruction& instr) {
  std::vector<int64_t> key{instr.opcode};
  key.insert(key.end(), instr.attrs.begin(), instr.attrs.end());
  for (const isa::TensorRef& t : instr.operands) {
    key.push_back(static_cast<int64_t>(t.dtype));
    key.push_back(t.rank());
    key.insert(key.end(), t.shape.begin(), t.shape.end());
  }
  return key;
}

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
