#include "isa/unit_cycles.h"

#include <algorithm>
#include <array>

#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/extension.h"

namespace fracsim::isa {

namespace {

// The parameters' names, in the order parameter_values() gives their values.
constexpr std::array<const char*, 4> kParameters = {"rows", "cols", "lanes", "width"};

std::array<int64_t, 4> parameter_values(const LeafParams& p, DType dtype) {
  const auto& m = p.matrix[static_cast<size_t>(dtype)];
  return {m[0], m[1], p.lanes, p.width};
}

}  // namespace

std::map<std::string, int64_t> LeafParams::values(DType dtype) const {
  const std::array<int64_t, 4> v = parameter_values(*this, dtype);
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < kParameters.size(); ++i) out.emplace(kParameters[i], v[i]);
  return out;
}

void LeafParams::bind(DType dtype, Vars& vars) const {
  static const std::array<int, 4> ids = [] {
    std::array<int, 4> a{};
    for (size_t i = 0; i < kParameters.size(); ++i) a[i] = var_id(kParameters[i]);
    return a;
  }();
  const std::array<int64_t, 4> v = parameter_values(*this, dtype);
  for (size_t i = 0; i < ids.size(); ++i) vars.set(ids[i], v[i]);
}

namespace {

// `op`'s cycles formula with the unit's parameters already in `vars`.
uint64_t formula_cycles(const OpDef& op, const Instruction& instr, Vars& vars) {
  for (int64_t e : dim_extents(op, instr))
    if (e == 0) return 0;  // an empty piece takes no time
  bind_vars(op, instr, vars);
  const int64_t c = op.cycles.eval(vars);
  FRACSIM_ASSERT(c >= 0, "op {}: cycles formula gave {}", op.name, c);
  return static_cast<uint64_t>(c);
}

}  // namespace

uint64_t unit_cycles(const OpDef& op, const Instruction& instr,
                     const std::map<std::string, int64_t>& params) {
  bind_dims(op, instr, op.name);  // its checks
  Vars vars;
  for (const auto& [name, value] : params) vars.set(var_id(name), value);
  return formula_cycles(op, instr, vars);
}

uint64_t leaf_cycles(const OpDef& op, const Instruction& instr, const LeafParams& leaf) {
  if (op.is_extension()) {
    const Expansion x = expand_sequence(op, instr);
    uint64_t total = 0, first_cycles = 0;
    for (size_t s = 0; s < x.steps.size(); ++s) {
      const uint64_t c = leaf_cycles(*x.step_ops[s], x.steps[s], leaf);
      if (s == 0) first_cycles = c;
      total += c;
    }
    if (leaf.overlapped_epilogue && x.steps.size() > 1) {
      const OpDef& first = *x.step_ops[0];
      bool epilogue = first.unit == UnitKind::matrix;
      for (size_t s = 1; s < x.steps.size(); ++s)
        epilogue = epilogue && x.step_ops[s]->unit == UnitKind::vector;
      if (epilogue) {
        const Instruction& mm = x.steps[0];
        const uint64_t m = first_cycles, v = total - m;
        const auto& shape = leaf.matrix[static_cast<size_t>(mm.operands[0].dtype)];
        int64_t outputs = 0;
        for (size_t o = 0; o < first.operands.size(); ++o)
          if (first.operands[o].role == OperandRole::out) outputs += mm.operands[o].elements();
        const int64_t block = shape[0] * shape[1];
        const uint64_t blocks =
            static_cast<uint64_t>(std::max<int64_t>(1, (outputs + block - 1) / block));
        return std::max(m, v) + (std::min(m, v) + blocks - 1) / blocks;
      }
    }
    return total;
  }
  const DType dtype = instr.operands.empty() ? DType::f32 : instr.operands[0].dtype;
  Vars vars;
  leaf.bind(dtype, vars);
  return formula_cycles(op, instr, vars);
}

}  // namespace fracsim::isa
