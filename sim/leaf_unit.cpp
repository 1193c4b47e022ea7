#include "sim/leaf_unit.h"

#include <map>
#include <vector>

#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/extension.h"
#include "isa/key_map.h"

namespace fracsim::sim {
namespace {

// The C++ unit model: reference semantics for the data, the op's `cycles` formula (from
// isa/ops/*.yaml) over its dims and the leaf's unit parameters for the time.
class ModelLeafUnit : public LeafUnit {
 public:
  explicit ModelLeafUnit(const LevelSpec& leaf) : params_(leaf_params(leaf)) {}

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
    isa::PackedKey key(piece_key(instr));
    auto it = priced_.find(key);
    if (it == priced_.end()) it = priced_.emplace(std::move(key), price(op, instr)).first;
    return it->second;
  }

  uint64_t price(const isa::OpDef& op, const isa::Instruction& instr) const {
    return isa::leaf_cycles(op, instr, params_);
  }

 private:
  isa::LeafParams params_;
  isa::KeyMap<uint64_t> priced_;  // piece key -> cycles
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

isa::LeafParams leaf_params(const LevelSpec& leaf) {
  isa::LeafParams p;
  for (size_t d = 0; d < isa::kDTypeCount; ++d) {
    const MatrixShape m = leaf.matrix.for_dtype(static_cast<isa::DType>(d));
    p.matrix[d] = {m.rows, m.cols};
  }
  p.lanes = leaf.vector.lanes;
  p.width = leaf.sort.width;
  p.overlapped_epilogue = leaf.overlapped_epilogue;
  return p;
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
