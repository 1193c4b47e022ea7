// How a node executes one instruction it received, before any timing: its serial pieces
// (isa::sequential), which operands stay in the static segment, and how big a cyclic sub-block
// is. Pure functions, shared by the node's ID stage and by the parent's folding decision.
//
// Static operands: an input whose view is the same in every piece (matmul's b when only M is
// split), that the instruction does not also write, is loaded once into the static segment and
// kept there for later instructions (the tensor permutation table finds it again).
//
// Memory budget: isa::sequential sizes pieces for a sub-block of B = capacity / N, counting
// every operand. The plan first takes those pieces; a sub-block then needs only the largest
// piece P minus the static tiles S, and S + N * (P - S) <= N * B <= capacity always holds (the
// static operand stays inside the budget the decomposer used: safe). It then tries a larger
// budget (capacity - S) / N + S, whose pieces are fewer, and keeps that tighter plan only when
// its own static tiles S' and largest piece P' satisfy S' + N * (P' - S') <= capacity.
// Sub-blocks are no larger than P - S, so the rest of the memory keeps earlier static tiles.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "isa/decompose/cost_model.h"
#include "isa/decompose/sequential.h"
#include "isa/program.h"
#include "sim/machine_spec.h"
#include "sim/tensor_permutation_table.h"

namespace fracsim::sim {

struct NodeShape {
  uint64_t capacity = 0;  // local memory bytes
  int pipeline_depth = 1;
  int fanout = 1;     // children (1 at a leaf)
  std::string where;  // names the node in errors
  // The machine's cost model and the node's level in it: the policy decides the tiling and the
  // parallel split (null: halving).
  const isa::CostModel* model = nullptr;
  int level = 0;
  bool resident = false;  // resident partial sums (LevelSpec::resident_partial_sums)
  // The instruction is one of a run: the parent splits its own into several pieces, each
  // giving the node one (isa::CostModel::tiling_cycles's `in_run`; plan_instruction).
  bool run = false;
  // An inner node that keeps its outputs (LevelSpec::keep_outputs): where the memory allows,
  // the plan holds the whole output in the static segment (InstructionPlan::kept_out).
  bool keep_whole_output = false;
};

// The machine as the decomposer's cost model sees it (isa/decompose/cost_model.h), with the
// config's policy.
// `root_reserved`: the main memory's bytes the program's tensors take (the root's partial
// results go in the rest).
isa::CostModel cost_model(const MachineSpec& spec, uint64_t root_reserved = 0);

// What the root sees ahead, for the search's estimates: per instruction of `program`, its
// Instruction::reused bits (isa::reused_inputs; none under `halving`). A mark tells the level
// under the root that its nodes find the view again in their permutation tables; it is kept
// only where they can hold their part of every view marked across the instruction
// (isa::reused_bytes_live, shared equally by the level's nodes) in half their memory, the
// other half running the instructions in between.
// Below that level a constant that recurs alike (isa::recurring_inputs) stays marked
// (Instruction::recurs) down to the deepest level whose nodes, and every level's above, pass
// the same test for the views so marked.
struct ReuseMarks {
  uint32_t reused = 0, recurs = 0;  // Instruction's
  uint8_t recur_levels = 0;
  void apply(isa::Instruction& instr) const;
  bool operator==(const ReuseMarks& o) const {
    return reused == o.reused && recurs == o.recurs && recur_levels == o.recur_levels;
  }
};
std::vector<ReuseMarks> root_reuse_marks(const MachineSpec& spec, const isa::OpTable& ops,
                                         const isa::Program& program);

// The root's cyclic sub-block, where a piece's partial results go: the main memory beyond the
// program's `reserved` bytes over the root's pipeline depth.
uint64_t root_subblock_bytes(const MachineSpec& spec, uint64_t reserved);

struct InstructionPlan {
  std::vector<int64_t> tile;             // the tile length per dim the pieces were cut by
  std::vector<isa::Instruction> pieces;  // in the parent's memory, in issue order
  // Work after the last piece, in place on the parent's memory (isa::plan_sequential: the
  // merge of runs sorted piece by piece), done by the node's LFU (at a leaf, its unit).
  std::vector<isa::Instruction> finalize;
  std::vector<int> static_operands;     // operand indices held in the static segment
  std::vector<StaticRequest> requests;  // per static operand: its view and tile bytes
  uint64_t subblock_bytes = 0;          // one cyclic sub-block
  // Resident partial sums (isa::SequentialPlan::holds_output, empty when no piece keeps its
  // output). Every sub-block then starts with an accumulator of `accumulator_bytes` (the
  // largest out tiles of a piece), the piece's other tiles after it: the pieces sharing an
  // output tile (a group) keep it in the accumulator of sub-block (group % N). A group has at
  // least two pieces and at most N are in flight, so group g has written back before group g + N
  // starts.
  std::vector<uint8_t> holds_output;
  uint64_t accumulator_bytes = 0;
  // The output operand held whole in the static segment (-1: none), its request the last
  // (StaticUse::output): each piece writes its part there, in place, and writes it back from
  // there; when the instruction ends the node keeps the whole output, so that a later
  // instruction reading any part of it finds it (ResidentInput). Taken at an inner node that
  // keeps its outputs (NodeShape::keep_whole_output) and was given its parent's whole piece
  // (not NodeShape::run) when the plan has several pieces, the instruction one output, which
  // its pieces do not read or accumulate onto, each piece's part is one dense run of the
  // whole, and the plan with the whole output fits in half the local memory (the next
  // instruction goes beside it).
  int kept_out = -1;
};

// With a tiling pinned for `instr` at the node's level (isa::CostModel::pinned_tile), the plan
// of that tiling; ConfigError naming the node when it does not fit the local memory.
// Under `search`, an instruction of a run that accumulates onto its output (a piece of its
// parent's split along a reduce dim, past the first) is tiled as the run's first instruction,
// the same but for accumulating, would be, when that fits: the run then keeps one tiling and
// one sub-block size, which held partial sums need (NodeShape::run).
InstructionPlan plan_instruction(const isa::OpDef& op, const isa::OpTable& ops,
                                 const isa::Instruction& instr, const NodeShape& node);

// The root's plan: the program instruction is its only piece, nothing is static (its memory is
// the main memory).
InstructionPlan root_plan(const isa::Instruction& instr);

// The piece a node below the root splits each piece of `plan` across its children as (isa::
// parallel's `like`): the plan's first, as the node sees it (Instruction::reused is the root's).
isa::Instruction plan_like(const InstructionPlan& plan);

// What of `instr`'s recurring marks a node under the root passes on to the pieces of `plan`
// (Instruction::recurs): those of the inputs it holds in its static segment, whose parts its
// children then find at the same places for the next reader.
uint32_t passed_recurs(const InstructionPlan& plan, const isa::Instruction& instr);

// The static requests of `to`, an instruction congruent with `from` (same key): the views of
// `plan` (made for `from`) moved by each operand's address difference.
std::vector<StaticRequest> translated_requests(const InstructionPlan& plan,
                                               const isa::Instruction& from,
                                               const isa::Instruction& to);

// The outputs the node still holds when it has finished `plan`: its whole output when the plan
// keeps it (InstructionPlan::kept_out); else the out tiles of the pieces whose
// cyclic sub-block no later piece reuses (the last `depth`), as (view in the parent's memory,
// local address, tile bytes), in piece order. Tiles lie as Node::make_piece packs them: the
// non-static operands one after another from the sub-block's base, each aligned to kTileAlign;
// piece i takes sub-block (first_subblock + i) % depth (first_subblock: where the node's
// rotation stood, 0 unless it continued an overlapped instruction's, LevelSpec::overlap). With
// resident partial sums, the output tiles of the last `depth` groups, in their accumulators
// (group g's in sub-block (first_subblock + g) % depth: first_subblock is then the first
// group's accumulator, Job::first_accumulator).
struct HeldOutput {
  int operand = 0;
  isa::TensorRef view;
  uint64_t local = 0, bytes = 0;
};
std::vector<HeldOutput> held_outputs(const isa::OpDef& op, const InstructionPlan& plan,
                                     const SegmentLayout& layout, int depth,
                                     int first_subblock = 0);

// The plan of `to`, an instruction congruent with `from` (same key): `plan` (made for `from`)
// with each operand's views moved by that operand's address difference. Exact, because slicing
// moves with the address and the decomposition depends on shapes, strides and overlaps only.
// Empty when some finalize operand is not one of the instruction's operands.
std::optional<InstructionPlan> translated_plan(const InstructionPlan& plan,
                                               const isa::Instruction& from,
                                               const isa::Instruction& to);

// Instructions with equal keys decompose alike at a node: same opcode, attributes, dtypes,
// shapes and strides, and the same overlaps between operands (addresses aside otherwise).
std::vector<int64_t> congruence_key(const isa::Instruction& instr);

// Fails with isa::sequential's ConfigError (naming `node.where`, the op and its largest
// operand) when even the smallest legal piece of `instr` does not fit a sub-block of the node.
// `fits` (optional) holds the congruence keys of smallest pieces already found to fit this
// node: those are not decomposed again (they decompose alike).
void check_smallest_piece(const isa::OpDef& op, const isa::OpTable& ops,
                          const isa::Instruction& instr, const NodeShape& node,
                          std::set<std::vector<int64_t>>* fits = nullptr);

// "matmul a=f32@0x0[64,784:784,1] b=... out=... accumulate=0", for messages.
std::string instruction_text(const isa::OpDef& op, const isa::Instruction& instr);

}  // namespace fracsim::sim
