#include "sim/leaf_unit.h"

#include <map>

#include "isa/decompose/piece.h"
#include "isa/error.h"

namespace fracsim::sim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The C++ unit model: reference semantics for the data, the formulas above for the time.
class ModelLeafUnit : public LeafUnit {
 public:
  explicit ModelLeafUnit(const LevelSpec& leaf) : leaf_(leaf) {}

  uint64_t run(const isa::OpDef& op, const isa::Instruction& instr, isa::MemoryView* mem) override {
    if (mem) isa::execute_reference(op, instr, *mem);
    const std::vector<int64_t> ext = isa::dim_extents(op, instr);
    if (op.unit == "matrix") {
      return matrix_unit_cycles(leaf_.matrix, ext[op.dim_index("M")], ext[op.dim_index("N")],
                                ext[op.dim_index("K")]);
    }
    if (op.unit == "vector") {
      int64_t elements = 1;
      for (int64_t e : ext) elements *= e;
      return vector_unit_cycles(leaf_.vector, elements);
    }
    throw InternalError(
        fmt::format("leaf unit model: no unit class '{}' (op {})", op.unit, op.name));
  }

 private:
  LevelSpec leaf_;
};

std::map<std::string, LeafUnitFactory>& registry() {
  static std::map<std::string, LeafUnitFactory> r = {
      {"model", [](const LevelSpec& l) { return std::make_unique<ModelLeafUnit>(l); }}};
  return r;
}

}  // namespace

uint64_t matrix_unit_cycles(const MatrixUnitSpec& u, int64_t M, int64_t N, int64_t K) {
  if (M == 0 || N == 0 || K == 0) return 0;
  return ceil_div(M, u.rows) * ceil_div(N, u.cols) * K + u.rows + u.cols - 1;
}

uint64_t vector_unit_cycles(const VectorUnitSpec& u, int64_t elements) {
  return ceil_div(elements, u.lanes);
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
