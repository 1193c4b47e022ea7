#include "isa/decompose/execute.h"

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/error.h"

namespace fracsim::isa {
namespace {

void run_level(const OpDef& op, const OpTable& ops, const Instruction& instr, MemoryView parent,
               const std::vector<NodeBudget>& levels, size_t level, DecompositionStats& st) {
  const NodeBudget& b = levels[level];
  const bool leaf = level + 1 == levels.size();
  std::vector<uint8_t> local(b.bytes, 0);
  MemoryView lm{local.data(), local.size()};
  const SequentialPlan plan = plan_sequential(op, ops, instr, b);
  for (const Instruction& piece : plan.pieces) {
    ++st.pieces;
    LocalPiece lp = localize(op, piece, 0);
    for (const Transfer& t : lp.loads) {
      copy_tensor(t.parent, parent, t.local, lm);
      st.loaded_bytes += t.local.stored_bytes();
    }
    if (leaf) {
      execute_reference(op, lp.local, lm);
      ++st.leaf_runs;
    } else {
      ParallelSplit ps = parallel(op, ops, lp.local, b.fanout, lp.bytes, b.model, b.level);
      FRACSIM_ASSERT(lp.bytes + ps.scratch_bytes <= b.bytes, "piece overflows its budget");
      for (const Instruction& child : ps.children)
        run_level(op, ops, child, lm, levels, level + 1, st);
      for (const Instruction& r : ps.reductions) {
        execute_reference(ops.get(r.opcode), r, lm);
        ++st.reductions;
      }
    }
    for (const Transfer& t : lp.stores) {
      copy_tensor(t.local, lm, t.parent, parent);
      st.stored_bytes += t.local.stored_bytes();
    }
  }
  for (const Instruction& f : plan.finalize) {
    execute_reference(ops.get(f.opcode), f, parent);
    ++st.reductions;
  }
}

}  // namespace

void execute_decomposed(const OpDef& op, const OpTable& ops, const Instruction& instr,
                        MemoryView parent, const std::vector<NodeBudget>& levels,
                        DecompositionStats* stats) {
  FRACSIM_ASSERT(!levels.empty(), "no levels");
  DecompositionStats local_stats;
  run_level(op, ops, instr, parent, levels, 0, stats ? *stats : local_stats);
}

}  // namespace fracsim::isa
