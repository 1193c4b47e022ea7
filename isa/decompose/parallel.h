// Parallel decomposition: one instruction of a node into at most `fanout` child instructions
// plus the LFU work that combines their partial results. Pure function.
//
// Rule (halving): split parallel dims only, choosing the number of parts per dim that minimises
// the largest child's work (ties: fewer bytes moved, then fewer children). Only when no parallel
// dim can be split (all extents 1) does it split the largest reduce dim. `search` may split one
// reduce dim beside parallel dims (CostModel::parallel_parts). Along a reduce dim split across
// children, the child of chunk 0 writes its part of the output (under `search`, into scratch
// too: split_by_parts), each other child writes dense partials into scratch, and the LFU folds
// partial r into that part of the output, in order r = 1, 2, ..., with the dim's combining
// eltwise fn or the op itself ("self"); for a "merge" dim each child sorts its slice of the
// output and the LFU merges the runs.
// A reduce dim with a `final` attribute (a fused epilogue) clears it on every child; the LFU
// then runs the op over an empty range of that dim with accumulate set, so that the final step
// applies once, to the combined sum.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

struct ParallelSplit {
  std::vector<Instruction> children;    // children[i] runs on child i; size <= fanout
  std::vector<Instruction> reductions;  // eltwise instructions for the LFU, in order
  uint64_t scratch_bytes = 0;           // partial-result space used from scratch_base
};

// The LFU instruction out = fn(out, partial), or out = fn(*first, partial) with `first`: an
// eltwise, the tensors seen at eltwise's rank.
Instruction lfu_combine(const OpTable& ops, const std::string& fn, const TensorRef& out,
                        const TensorRef& partial, const TensorRef* first = nullptr);

// The LFU instruction that folds partial outputs into the output by running the op again with
// accumulate set, the partials as its inputs ("reduce: self").
Instruction self_combine(const OpDef& op, const Instruction& instr,
                         const std::vector<TensorRef>& partials);

// The `merge` instruction that merges `runs` sorted runs (balanced chunks along the merged dim)
// of the op's output in place ("reduce: merge").
Instruction merge_runs(const OpDef& op, const OpTable& ops, const Instruction& instr, int64_t runs);

// The parts per dim the rule above gives the parallel dims of `instr` (all 1 when it has none
// longer than 1).
std::vector<int64_t> halving_parts(const OpDef& op, const Instruction& instr, int fanout);

// The parts per dim a pinned partition (isa::PinnedDecision::parts) gives a piece of extents
// `ext`: each parallel dim longer than 1 the pinned parts, at most its extent; the rest 1.
std::vector<int64_t> pinned_partition(const OpDef& op, const std::vector<int64_t>& ext,
                                      const std::vector<int64_t>& pinned);

class CostModel;

// Whether `search` may split reduce dim `d` of `instr` across children beside parallel dims: not
// a kernel's taps, and its partials combine by an eltwise fn (each child's into its own part of
// the output), not by the op itself or a merge, which read the whole output.
bool reduce_splits_across(const OpDef& op, const Instruction& instr, size_t d);

// Whether a partition (parts per dim) splits a reduce dim across the children.
bool splits_reduce(const OpDef& op, const std::vector<int64_t>& parts);

// The split with `parts` per dim (at most one reduce dim split, and then only as the rule above
// allows): the children in row-major order over the dims' chunks (last dim fastest), the LFU's
// reductions, the scratch its partials take from `scratch_base`. `apart` (the search policy's
// splits): along a reduce dim combined by an eltwise fn, the child of chunk 0 writes its
// partials into scratch as the others do, unless the instruction accumulates onto the output
// (chunk 0 reads its old value), and the LFU's first fold writes fn(partial 0, partial 1) into
// the output: the same bytes move and the same sums are taken in the same order, but no child
// writes the output, so the children relate alike to the pieces around them.
ParallelSplit split_by_parts(const OpDef& op, const OpTable& ops, const Instruction& instr,
                             const std::vector<int64_t>& parts, uint64_t scratch_base,
                             bool apart = false);

// The LFU's cycles for one reduction: its output's elements at `throughput` per cycle.
uint64_t lfu_cycles(const Instruction& reduction, int64_t throughput);

// With `model` (policy search), the parts per dim are those of least estimated time for the
// children of a node of `level` (CostModel::parallel_parts); otherwise the rule above. With
// `like` too (below the root), those of `like`, each at most this piece's extent: a node splits
// every piece of an instruction as its plan's first, which the model estimates the tiling by.
ParallelSplit parallel(const OpDef& op, const OpTable& ops, const Instruction& instr, int fanout,
                       uint64_t scratch_base, const CostModel* model = nullptr, int level = 0,
                       const Instruction* like = nullptr);

}  // namespace fracsim::isa
