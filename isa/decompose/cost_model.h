// The decomposition policies and the cost model the `search` policy decides with (see
// isa/decompose/README.md). Pure: what a node of the machine would take for an instruction,
// estimated from the machine's numbers and the ops' own cycle formulas, never simulated.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/key_map.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/unit_cycles.h"

namespace fracsim::isa {

// How a node splits the instructions it receives.
//  halving: halve the dim that saves most bytes until a piece fits; give the children the
//           parallel split with the least work in its largest child (the baseline).
//  search:  among candidate serial tilings and parallel partitions, the one whose estimated
//           time is least.
enum class Policy : uint8_t { halving, search };
std::string_view policy_name(Policy p);
std::optional<Policy> policy_named(std::string_view name);
constexpr std::string_view kPolicyNames = "halving or search";

struct NodeBudget;  // isa/decompose/sequential.h

// One level of the machine as the cost model sees it; cycles are the level's own.
struct LevelCost {
  std::string name;
  uint64_t capacity = 0;  // a node's local memory
  int depth = 1;          // pieces in flight (cyclic sub-blocks)
  int fanout = 1;         // children of a node of this level (1 at the leaves)
  bool leaf = false;
  // A load or a write-back into a node of this level: its link, or its share of the parent's
  // memory when all its siblings move at once, whichever is less; plus the latency per batch.
  double bytes_per_cycle = 1;
  double latency_cycles = 0;
  // Split transactions on its link: once the pipeline is full, a piece's load (write-back) is
  // requested while the one before still moves, so a piece takes the longer of its data and
  // the latency, not their sum.
  bool pipelined = false;
  bool posted = false;         // link.posted_writes: WB and the sub-block see a write's data only
  int64_t lfu_throughput = 1;  // elements per cycle its LFU combines (inner levels)
  int decode_cycles = 1;
  // Resident partial sums: the pieces sharing an output tile run back to back, the tile staying
  // in local memory (loaded by none of them, written back by the last).
  bool resident = false;
  // A load waits only for earlier pieces that write bytes it reads (the machine's `hazards:
  // tiles`), not for every one whose byte span meets its own (`spans`).
  bool tile_hazards = false;
  // Its nodes take their parent's next instruction while the one before drains (`overlap`):
  // in a run of the parent's pieces, a node's loads, execution and write-backs of successive
  // instructions overlap, so each costs its longest stage, not the three in turn.
  bool overlap = false;
  // Held partial sums (the machine's `hold_partial_sums` with `keep_outputs`): where its
  // parent's pieces accumulate onto one tile, a node continues its part of it from one
  // instruction to the next in the same cyclic segment.
  bool hold = false;
  double child_clock_ratio = 1;  // this level's clock / its children's (their cycles to ours)
  LeafParams unit;               // the leaf's units (leaf level)
};

// A decision fixed at one level of the machine instead of the policy's (the mapping oracle's
// candidates, sim/mapping_oracle.h): a node of `level` that receives an instruction whose
// shape_key is `instruction` tiles it by `tile` (a length per dim; empty: the policy's), and
// every piece a node of `level` splits across its children gets `parts` (parts per dim, each
// at most the piece's extent; empty: the policy's). Only the nodes' decisions see it; the
// estimates the policy judges candidates by do not, unless `estimates`.
struct PinnedDecision {
  int level = 0;
  std::vector<int64_t> instruction, tile, parts;
  // The estimates judge by `parts` too: a model that estimates one candidate (the figure the
  // mapping oracle prints beside its simulation), never one a simulation decides with.
  bool estimates = false;
};

// The root as the cost model sees it: only its LFU, which combines what a reduce dim split
// across its children leaves, its clock against theirs, and the room a piece's partial results
// have in its memory (a cyclic sub-block beside the program's tensors).
struct RootCost {
  int64_t lfu_throughput = 1;
  double child_clock_ratio = 1;
  uint64_t scratch_bytes = std::numeric_limits<uint64_t>::max();
};

class CostModel {
 public:
  CostModel(Policy policy, std::vector<LevelCost> levels, RootCost root = {});

  Policy policy() const { return policy_; }
  const LevelCost& level(int l) const { return levels_.at(static_cast<size_t>(l)); }
  int levels() const { return static_cast<int>(levels_.size()); }

  // Estimated cycles (of level `l`) that a node of level `l` takes for `instr`, whose operands
  // lie in its parent's memory: its serial pieces (decomposed by the policy), each loaded,
  // executed (on its children, or its unit at a leaf) and written back, overlapped N deep.
  // `in_run`: the instruction is one of a run of its parent's pieces (tiling_cycles); under
  // `search` an accumulating one is then tiled as the run's first (starting_instruction).
  double node_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& instr,
                     bool in_run = false) const;

  // Estimated cycles of a tiling (a tile length per dim) at a node of level `l`. When even a
  // lower bound of it is at least `at_least`, that bound instead (the parts it leaves out, the
  // costly ones, are then not estimated): its time without the pieces' execution; with the
  // first pieces' but without the accumulating pieces' (whose children run whole); or with
  // those taken as their inputs' loading (inputs_bound). A search that only asks whether the
  // tiling beats a time gets the same answer.
  // `in_run`: the instruction is one of a run its parent's pieces give the node (the parent
  // splits its own instruction into several). At a leaf whose level overlaps instructions,
  // where the next instruction can go on beside this one (it continues this one's held tile, or
  // both fit the memory at once), the first piece's load and the last write-back overlap the
  // instructions before and after: the first piece costs a period of the steady state, not
  // its load, execution and write-back in turn.
  double tiling_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& instr,
                       const std::vector<int64_t>& tile,
                       double at_least = std::numeric_limits<double>::infinity(),
                       bool in_run = false) const;

  // choose_tiling's choices under `search`, remembered by the instruction's planning key and the
  // budget: a node plans an instruction against up to three budgets, and its parent's search
  // estimates the same instruction's tiling again. pin() forgets them.
  PackedKey tiling_key(const OpDef& op, const Instruction& instr, const NodeBudget& budget) const;
  const std::vector<int64_t>* remembered_tiling(const PackedKey& key) const;
  void remember_tiling(PackedKey key, const std::vector<int64_t>& tile) const;

  // Estimated cycles of a piece's execution at level `l` (EX): the unit's cycles at a leaf;
  // at an inner node its largest child's quick_cycles, split by the policy, plus the LFU's
  // reductions.
  // How the children's time is taken (`run`): quick_cycles, as one instruction alone; whole:
  // the piece's children wait for an earlier piece's write-back (it accumulates onto what that
  // piece wrote), so each runs whole (node_cycles), not pipelined; steady: in a run of like
  // pieces, each child's steady_cycles where its level overlaps instructions.
  enum class ChildRun : uint8_t { quick, whole, steady };
  double execute_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& piece,
                        ChildRun run = ChildRun::quick) const;

  // The period of a node of level `l` per instruction in a run of like instructions that it
  // overlaps (LevelCost::overlap): the longest of loading its operands, executing it (its
  // children's periods in turn, where theirs overlap) and writing its outputs back (each
  // transfer in the steady state of its link), and at least its quick_cycles over its depth
  // (an instruction holds its sub-blocks from its loads to the ends of its write-backs).
  double steady_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& instr) const;

  // A quick estimate of a node of level `l` running `instr` whole: the longest of loading its
  // operands, executing it (as execute_cycles) and writing its outputs back, plus the other two
  // divided by the fewest pieces that fit its sub-blocks (a single piece runs the three in
  // turn), plus a latency each way. What candidates for the level above are judged by (a full node_cycles per
  // candidate would run the node's own search each time). When even its time without the
  // execution is at least `at_least`, that lower bound instead, as for tiling_cycles.
  double quick_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& instr,
                      double at_least = std::numeric_limits<double>::infinity()) const;

  // What a partition is asked for: to estimate a piece of a candidate tiling, or to split a
  // piece the node executes (decide: where the children are leaves, the candidates whose quick
  // estimates lie near the best are re-ranked by the children's full estimates).
  enum class Choice : uint8_t { estimate, decide };

  // The parts per dim that `search` splits a piece across a node's `fanout` children with (a
  // node of level `l`, -1 for the root; its children are level l + 1); cached by the piece's
  // shape. A candidate is judged by its largest child's quick_cycles, plus, where it splits a
  // reduce dim, the node's LFU combining the partials (in the children's cycles).
  const std::vector<int64_t>& parallel_parts(int l, const OpDef& op, const OpTable& ops,
                                             const Instruction& piece, int fanout,
                                             Choice choice = Choice::estimate) const;

  void pin(PinnedDecision decision);
  // The pinned tiling of `instr` at a node of level `l`, or null (the policy decides).
  const std::vector<int64_t>* pinned_tile(int l, const Instruction& instr) const;
  // The pinned parts of a piece's partition at a node of level `l`, or null.
  const std::vector<int64_t>* pinned_parts(int l) const;

 private:
  double execute_uncached(int l, const OpDef& op, const OpTable& ops, const Instruction& piece,
                          ChildRun run) const;
  // A lower bound of execute_cycles(l, piece, ChildRun::whole) where its children split parallel
  // dims: the largest child loading the inputs it reads over its link (0 otherwise).
  double inputs_bound(int l, const OpDef& op, const OpTable& ops, const Instruction& piece) const;
  // The cycles (of level `l`, -1 the root) the LFU takes for a split's reductions.
  double reduction_cycles(int l, const std::vector<Instruction>& reductions) const;
  // The largest child of a node of level `l` splitting `piece` across its children along
  // parallel dims (parallel_parts); none when no parallel dim is longer than 1.
  std::optional<Instruction> largest_child(int l, const OpDef& op, const OpTable& ops,
                                           const Instruction& piece) const;

  Policy policy_;
  std::vector<LevelCost> levels_;
  RootCost root_;
  // Keyed by shape_key (node and tiling estimates by planning_key).
  template <typename V>
  using Cache = KeyMap<V>;
  mutable std::vector<Cache<double>> node_cache_, quick_cache_, steady_cache_, execute_cache_,
      tiling_cache_;
  mutable std::vector<Cache<std::vector<int64_t>>> parts_cache_;
  mutable Cache<std::vector<int64_t>> tiling_choices_;  // by tiling_key
  std::optional<PinnedDecision> pinned_;
};

// What decides a piece's decomposition and cost: opcode, attributes, dtypes, shapes, which
// strides are 0 (broadcast dims are stored once) and which inputs are read again (reused).
std::vector<int64_t> shape_key(const Instruction& instr);

// Per instruction of `program`, its Instruction::reused bits: input o's view (exactly: address,
// dtype, shape, strides) is an input of a later instruction, and no instruction from this one
// up to that one writes a byte of it. What the root controller, which holds the whole program,
// sees ahead. Under `search` a tiling of a node under the root that keeps such an input whole
// in the static segment is not charged its load: the tensor permutation table finds it again
// for the later reader, so its load is spread over the uses.
std::vector<uint32_t> reused_inputs(const OpTable& ops, const Program& program);

// Per instruction of `program`, the reused_inputs bits whose view recurs alike: no instruction
// of the program writes a byte of it (a constant: weights), and its next reader is an
// instruction of the same planning_key (op, attributes, operand shapes) that reads it as the
// same operand (an LSTM's recurrent weights, step after step). A node plans the two alike, so
// each child gets the same part of the view both times and may keep it (Instruction::recurs).
std::vector<uint32_t> recurring_inputs(const OpTable& ops, const Program& program);

// A view as an exact key: address, dtype, shape and strides (the length gives the rank).
std::vector<int64_t> view_key(const TensorRef& v);

// Per instruction of `program`, the bytes of the views that reused_inputs' marks keep wanted
// across it: each view an instruction up to this one marks, whose reader is this one or a
// later one, counted once (views equal exactly; overlapping views count each). With `only`,
// the marks among its bits alone (per instruction, as reused_inputs gives them).
std::vector<uint64_t> reused_bytes_live(const OpTable& ops, const Program& program,
                                        const std::vector<uint32_t>* only = nullptr);

// shape_key and, per input, whether it meets an output (input_meets_output): what decides the
// static inputs and resident partial sums of a node's tiling, and so its estimate.
std::vector<int64_t> planning_key(const OpDef& op, const Instruction& instr);

}  // namespace fracsim::isa
