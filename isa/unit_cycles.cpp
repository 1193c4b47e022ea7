#include "isa/unit_cycles.h"

#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/extension.h"

namespace fracsim::isa {

std::map<std::string, int64_t> LeafParams::values(DType dtype) const {
  const auto& m = matrix[static_cast<size_t>(dtype)];
  return {{"rows", m[0]}, {"cols", m[1]}, {"lanes", lanes}, {"width", width}};
}

uint64_t unit_cycles(const OpDef& op, const Instruction& instr,
                     const std::map<std::string, int64_t>& params) {
  std::map<std::string, int64_t> vars = bind_dims(op, instr, op.name);
  int64_t elements = 1;
  for (int64_t e : dim_extents(op, instr)) elements *= e;
  if (elements == 0) return 0;  // an empty piece takes no time
  vars.insert(params.begin(), params.end());
  const int64_t c = op.cycles.eval(vars);
  FRACSIM_ASSERT(c >= 0, "op {}: cycles formula gave {}", op.name, c);
  return static_cast<uint64_t>(c);
}

uint64_t leaf_cycles(const OpDef& op, const Instruction& instr, const LeafParams& leaf) {
  if (op.is_extension()) {
    const Expansion x = expand_sequence(op, instr);
    uint64_t total = 0;
    for (size_t s = 0; s < x.steps.size(); ++s)
      total += leaf_cycles(*x.step_ops[s], x.steps[s], leaf);
    return total;
  }
  const DType dtype = instr.operands.empty() ? DType::f32 : instr.operands[0].dtype;
  return unit_cycles(op, instr, leaf.values(dtype));
}

}  // namespace fracsim::isa
