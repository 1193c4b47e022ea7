// Sequential decomposition: one instruction a node received into serial pieces, each small
// enough that its tiles (and the scratch its parallel split needs) fit one cyclic sub-block of
// the node's local memory. Pure function.
//
// Rule: start from the whole instruction; while the largest piece does not fit, halve the tile
// of the dim whose halving saves the most bytes (ties: parallel before reduce dims, then dim
// order); `whole` dims are never split. The tiles are then rebalanced so that every piece of a
// dim has near-equal length. Pieces are issued with reduce dims outermost (so a piece that
// accumulates onto an output tile is issued a whole sweep after the piece that wrote it), then
// the other dims in OpDef order, the last fastest. With resident partial sums (NodeBudget::
// resident) the reduce dims that accumulate go innermost instead, in the same order among
// themselves (so every output element adds its terms in the same order): the pieces sharing an
// output tile are issued one after another, and all but the last leave it in local memory for
// the next (SequentialPlan::holds_output).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

class CostModel;

struct NodeBudget {
  uint64_t bytes = 0;  // one cyclic sub-block
  int fanout = 1;      // children (1 at a leaf)
  std::string where;   // names the node in errors ("level 1 (core)")
  // When set, the tiling must fit the whole local memory instead of one sub-block: inputs that
  // stay whole in every piece (the static segment) count once, the rest `depth` times (the
  // cyclic sub-blocks). The tiling then prefers splits that keep large reused inputs whole.
  uint64_t capacity = 0;
  int depth = 1;
  // The node's level in the cost model; with a model whose policy is `search`, the tiling and
  // the parallel split are the ones of least estimated time (null: halving).
  const CostModel* model = nullptr;
  int level = 0;
  // Resident partial sums at this node (the machine's `resident_partial_sums`).
  bool resident = false;
  // The instruction is one of a run of its parent's pieces (CostModel::tiling_cycles).
  bool run = false;
};

// Whether tiling the instruction's dims by `tile` lets the pieces sharing an output tile keep it
// resident: a reduce dim with an accumulate attribute is split, every split reduce dim has one,
// and no input overlaps an output (an input must not read what the node has not written back).
bool resident_split(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile);

// The instruction that starts the output `instr` accumulates onto: the same, its accumulate
// attributes 0 and the final attributes of their reduce dims 0 (none when `instr` does not
// accumulate). Under `search` a node tiles an accumulating instruction of a run as this one
// (CostModel::node_cycles, sim's plan_instruction), and splits an accumulating piece across
// children that hold partial sums as this one (CostModel::parallel_parts), so that the pieces of
// one output tile keep one tiling and one partition.
std::optional<Instruction> starting_instruction(const OpDef& op, const Instruction& instr);

// Whether operand `o`'s byte span meets that of an output of the instruction (an input it
// also writes, in place).
bool input_meets_output(const OpDef& op, const Instruction& instr, size_t o);

// Whether a tiling leaves input `o` whole: the same view in every piece, not written by the
// instruction (what the static segment holds).
bool input_stays_whole(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile,
                       size_t o);
// The same with the instruction's dim_extents given (callers that ask for every operand).
bool input_stays_whole(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& ext,
                       const std::vector<int64_t>& tile, size_t o);

// Bytes of the inputs a tiling leaves whole (input_stays_whole), each aligned as the static
// segment places it.
uint64_t static_footprint(const OpDef& op, const Instruction& instr,
                          const std::vector<int64_t>& tile);

// Bytes one piece occupies in a sub-block: its dense tiles plus its parallel split's scratch
// (split by `model`'s policy for a node of `level`; halving without a model).
uint64_t piece_footprint(const OpDef& op, const OpTable& ops, const Instruction& piece, int fanout,
                         const CostModel* model = nullptr, int level = 0);

// The largest footprint of the pieces that tiling the instruction's dims by `tile` (a length
// per dim; window dims ignored) gives, wherever they lie (window halos at their widest).
uint64_t tiling_footprint(const OpDef& op, const OpTable& ops, const Instruction& instr,
                          const std::vector<int64_t>& tile, int fanout,
                          const CostModel* model = nullptr, int level = 0);

// A piece of the given lengths (one per dim) with the largest footprint it can have anywhere in
// the instruction (window halos of an interior piece).
Instruction worst_case_piece(const OpDef& op, const Instruction& instr,
                             const std::vector<int64_t>& len);

// What a tiling costs against the budget: the bytes of its largest piece (one sub-block), or,
// with a capacity, of the whole local memory it needs (the static inputs once plus N
// sub-blocks for the rest). It fits when the cost is at most budget_limit (the sub-block or the
// capacity).
uint64_t tiling_cost(const OpDef& op, const OpTable& ops, const Instruction& instr,
                     const std::vector<int64_t>& tile, const NodeBudget& budget);
uint64_t budget_limit(const NodeBudget& budget);

// The tile length per dim the budget's policy chooses (the pieces of plan_sequential). Throws
// as sequential() does when nothing fits.
std::vector<int64_t> choose_tiling(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                   const NodeBudget& budget);

struct SequentialPlan {
  std::vector<int64_t> tile;  // the tile length per dim the pieces were cut by
  std::vector<Instruction> pieces;
  // LFU work the node streams over its parent's memory after the pieces (the merge of sorted
  // runs when a "reduce: merge" dim was split serially). Its operands are parent views.
  std::vector<Instruction> finalize;
  // Resident partial sums: per piece, 1 when its output tiles stay in local memory for the next
  // piece, which accumulates onto them (so this piece writes nothing back and the next loads
  // nothing of its output); empty when no piece keeps its output.
  std::vector<uint8_t> holds_output;
};

SequentialPlan plan_sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                               const NodeBudget& budget);

// The pieces of a given tiling (a tile length per dim, window dims ignored), rebalanced and in
// issue order as plan_sequential gives them (with `resident_sums`, as for a budget with
// resident partial sums); no check that they fit anything.
SequentialPlan plan_tiling(const OpDef& op, const OpTable& ops, const Instruction& instr,
                           const std::vector<int64_t>& tile, bool resident_sums = false);

// Throws ConfigError naming budget.where, the op and its largest operand when even a piece of
// extent 1 in every splittable dim does not fit.
std::vector<Instruction> sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                    const NodeBudget& budget);  // plan_sequential(...).pieces

}  // namespace fracsim::isa
