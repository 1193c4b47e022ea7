#include "isa/decompose/cost_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/search_space.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"

namespace fracsim::isa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// CostModel::Choice::decide re-ranks the partitions whose children's quick estimates lie within
// kRefine of the best by full estimates, at most kRefined distinct children.
constexpr double kRefine = 0.1;
constexpr size_t kRefined = 2;

// Bytes the piece reads and writes in its parent's memory (broadcast dims once).
void piece_traffic(const OpDef& op, const Instruction& piece, double& read, double& written) {
  read = written = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const double b = static_cast<double>(piece.operands[o].stored_bytes());
    if (operand_is_read(op, piece, o)) read += b;
    if (op.operands[o].role == OperandRole::out) written += b;
  }
}

// The period of a transfer of `t` cycles (latency included) into a node of level `lc` in its
// pipeline's steady state. On a pipelined link a piece is requested when it is queued, which a
// sub-block allows once the pieces in LD and EX hold two of them; so N - 2 pieces wait
// requested ahead of it, and at a period T the latency left when its transfer starts is
// latency - (N - 2) T: T = max(data, (data + latency) / (N - 1)).
double flowing_cycles(const LevelCost& lc, double t) {
  const double data = t - lc.latency_cycles;
  return lc.pipelined && lc.depth > 1 ? std::max(data, t / (lc.depth - 1)) : t;
}

// A write-back of `t` cycles (latency included) as the WB stage and the sub-block see it in
// the pipeline's steady state: a posted write's stage is done once its data has left, its
// latency (the flight) delaying only those who read what it wrote; otherwise as a load.
double posted_cycles(const LevelCost& lc, double t) {
  return lc.posted ? t - lc.latency_cycles : flowing_cycles(lc, t);
}

// The piece of `instr` with the longest chunk of every dim that `parts` splits it into.
Instruction largest_part(const OpDef& op, const Instruction& instr,
                         const std::vector<int64_t>& parts) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
  for (size_t d = 0; d < ext.size(); ++d)
    if (ext[d] > 0) r.len[d] = ceil_div(ext[d], parts[d]);
  return slice_instruction(op, instr, r);
}

}  // namespace

std::string_view policy_name(Policy p) { return p == Policy::halving ? "halving" : "search"; }

std::optional<Policy> policy_named(std::string_view name) {
  if (name == "halving") return Policy::halving;
  if (name == "search") return Policy::search;
  return std::nullopt;
}

namespace {

// shape_key's integers, pushed onto `key` (a vector, or a PackedKey for the caches).
template <typename Key>
void put_shape_key(const Instruction& instr, Key& key) {
  key.push_back(instr.opcode);
  for (int64_t a : instr.attrs) key.push_back(a);
  key.push_back(instr.reused);
  key.push_back(instr.recurs);
  key.push_back(instr.recur_levels);
  for (const TensorRef& t : instr.operands) {
    key.push_back(static_cast<int64_t>(t.dtype));
    key.push_back(t.rank());
    for (size_t a = 0; a < t.shape.size(); ++a)
      key.push_back(t.strides[a] == 0 ? -t.shape[a] - 1 : t.shape[a]);
  }
}

// planning_key's, likewise.
template <typename Key>
void put_planning_key(const OpDef& op, const Instruction& instr, Key& key) {
  put_shape_key(instr, key);
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::in)
      key.push_back(input_meets_output(op, instr, o) ? 1 : 0);
}

// The value `compute` gives for `instr`, remembered in `cache` by its shape_key.
template <typename Cache, typename Compute>
double cached_by_shape(Cache& cache, const Instruction& instr, Compute compute) {
  PackedKey packed;
  put_shape_key(instr, packed);
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const double t = compute();
  cache.emplace(std::move(packed), t);
  return t;
}

}  // namespace

std::vector<int64_t> shape_key(const Instruction& instr) {
  size_t n = 4 + instr.attrs.size();
  for (const TensorRef& t : instr.operands) n += 2 + t.shape.size();
  std::vector<int64_t> key;
  key.reserve(n);
  put_shape_key(instr, key);
  return key;
}

namespace {

// The first instruction after `i` that reads input `o` of instruction `i`, its exact view, before
// any instruction from `i` on writes a byte of it; in.size() when none does.
size_t next_reader(const OpTable& ops, const std::vector<Instruction>& in, size_t i, size_t o) {
  const TensorRef& v = in[i].operands[o];
  auto writes_over = [&](size_t k) {
    const OpDef& op = ops.get(in[k].opcode);
    for (size_t w = 0; w < op.operands.size(); ++w)
      if (op.operands[w].role == OperandRole::out && views_overlap(in[k].operands[w], v))
        return true;
    return false;
  };
  for (size_t j = i; j < in.size(); ++j) {
    if (j > i) {
      const OpDef& later = ops.get(in[j].opcode);
      for (size_t r = 0; r < later.operands.size(); ++r)
        if (later.operands[r].role == OperandRole::in && in[j].operands[r] == v) return j;
    }
    if (writes_over(j)) break;
  }
  return in.size();
}

// Calls f(i, o, reader) for every input o of every instruction i whose view a later
// instruction reads again (next_reader).
template <typename F>
void for_each_reuse(const OpTable& ops, const Program& program, F f) {
  const std::vector<Instruction>& in = program.instructions;
  for (size_t i = 0; i < in.size(); ++i) {
    const OpDef& op = ops.get(in[i].opcode);
    for (size_t o = 0; o < op.operands.size() && o < 32; ++o) {
      if (op.operands[o].role != OperandRole::in || in[i].operands[o].stored_bytes() == 0) continue;
      if (const size_t r = next_reader(ops, in, i, o); r < in.size()) f(i, o, r);
    }
  }
}

}  // namespace

std::vector<uint32_t> reused_inputs(const OpTable& ops, const Program& program) {
  std::vector<uint32_t> out(program.instructions.size(), 0);
  for_each_reuse(ops, program, [&](size_t i, size_t o, size_t) { out[i] |= uint32_t{1} << o; });
  return out;
}

std::vector<uint32_t> recurring_inputs(const OpTable& ops, const Program& program) {
  const std::vector<Instruction>& in = program.instructions;
  // Every view the program writes, by the begin of its byte span.
  std::vector<std::pair<uint64_t, const TensorRef*>> written;
  for (const Instruction& instr : in) {
    const OpDef& op = ops.get(instr.opcode);
    for (size_t w = 0; w < op.operands.size(); ++w)
      if (op.operands[w].role == OperandRole::out)
        written.emplace_back(instr.operands[w].byte_span().first, &instr.operands[w]);
  }
  std::sort(written.begin(), written.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  // reach[k]: the largest end of a span among written[0..k].
  std::vector<uint64_t> reach(written.size());
  for (size_t k = 0; k < written.size(); ++k)
    reach[k] = std::max(written[k].second->byte_span().second, k > 0 ? reach[k - 1] : 0);
  auto written_over = [&](const TensorRef& v) {
    const auto [b, e] = v.byte_span();
    // The views whose spans begin before e, back to the last one whose span can reach past b.
    size_t k = static_cast<size_t>(
        std::lower_bound(written.begin(), written.end(), e,
                         [](const auto& x, uint64_t a) { return x.first < a; }) -
        written.begin());
    while (k > 0 && reach[k - 1] > b)
      if (views_overlap(*written[--k].second, v)) return true;
    return false;
  };
  // Planned alike: what decides a node's plan of each, its planning key, is the same.
  auto alike = [&](const Instruction& a, const Instruction& b) {
    return a.opcode == b.opcode &&
           planning_key(ops.get(a.opcode), a) == planning_key(ops.get(b.opcode), b);
  };
  std::vector<uint32_t> out(in.size(), 0);
  for_each_reuse(ops, program, [&](size_t i, size_t o, size_t reader) {
    if (alike(in[i], in[reader]) && in[reader].operands[o] == in[i].operands[o] &&
        !written_over(in[i].operands[o]))
      out[i] |= uint32_t{1} << o;
  });
  return out;
}

std::vector<int64_t> view_key(const TensorRef& v) {
  std::vector<int64_t> key{static_cast<int64_t>(v.address), static_cast<int64_t>(v.dtype)};
  key.insert(key.end(), v.shape.begin(), v.shape.end());
  key.insert(key.end(), v.strides.begin(), v.strides.end());
  return key;
}

std::vector<uint64_t> reused_bytes_live(const OpTable& ops, const Program& program,
                                        const std::vector<uint32_t>* only) {
  const std::vector<Instruction>& in = program.instructions;
  // Per instruction, the views wanted across it (each once: a view read again by several
  // instructions is one tensor in memory).
  std::vector<std::set<std::vector<int64_t>>> live(in.size());
  std::vector<uint64_t> out(in.size(), 0);
  for_each_reuse(ops, program, [&](size_t i, size_t o, size_t reader) {
    if (only && !((*only)[i] >> o & 1)) return;
    const TensorRef& v = in[i].operands[o];
    const std::vector<int64_t> key = view_key(v);
    for (size_t k = i; k <= reader; ++k)
      if (live[k].insert(key).second) out[k] += v.stored_bytes();
  });
  return out;
}

std::vector<int64_t> planning_key(const OpDef& op, const Instruction& instr) {
  std::vector<int64_t> key;
  put_planning_key(op, instr, key);
  return key;
}

void CostModel::pin(PinnedDecision decision) {
  pinned_ = std::move(decision);
  tiling_choices_ = {};
}

PackedKey CostModel::tiling_key(const OpDef& op, const Instruction& instr,
                                const NodeBudget& budget) const {
  PackedKey key;
  put_planning_key(op, instr, key);
  for (const uint64_t v : {budget.bytes, budget.capacity}) key.push_back(static_cast<int64_t>(v));
  for (const int v : {budget.fanout, budget.depth, budget.level}) key.push_back(v);
  key.push_back(budget.resident);
  key.push_back(budget.run);
  return key;
}

const std::vector<int64_t>* CostModel::remembered_tiling(const PackedKey& key) const {
  const auto it = tiling_choices_.find(key);
  return it == tiling_choices_.end() ? nullptr : &it->second;
}

void CostModel::remember_tiling(PackedKey key, const std::vector<int64_t>& tile) const {
  tiling_choices_.emplace(std::move(key), tile);
}

const std::vector<int64_t>* CostModel::pinned_tile(int l, const Instruction& instr) const {
  if (!pinned_ || pinned_->level != l || pinned_->tile.empty() ||
      pinned_->instruction != shape_key(instr))
    return nullptr;
  return &pinned_->tile;
}

const std::vector<int64_t>* CostModel::pinned_parts(int l) const {
  if (!pinned_ || pinned_->level != l || pinned_->parts.empty()) return nullptr;
  return &pinned_->parts;
}

CostModel::CostModel(Policy policy, std::vector<LevelCost> levels, RootCost root)
    : policy_(policy),
      levels_(std::move(levels)),
      root_(root),
      node_cache_(levels_.size()),
      quick_cache_(levels_.size()),
      steady_cache_(levels_.size()),
      execute_cache_(levels_.size()),
      tiling_cache_(levels_.size()),
      parts_cache_(levels_.size() + 1) {}

double CostModel::execute_cycles(int l, const OpDef& op, const OpTable& ops,
                                 const Instruction& piece, ChildRun run) const {
  // At a leaf every run is the unit's cycles; children that do not overlap their instructions
  // run each piece as alone.
  if (level(l).leaf)
    run = ChildRun::quick;
  else if (run == ChildRun::steady && !level(l + 1).overlap)
    run = ChildRun::quick;
  auto& cache = execute_cache_.at(static_cast<size_t>(l));
  PackedKey packed;
  put_shape_key(piece, packed);
  packed.push_back(static_cast<int64_t>(run));
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const double t = execute_uncached(l, op, ops, piece, run);
  cache.emplace(std::move(packed), t);
  return t;
}

double CostModel::execute_uncached(int l, const OpDef& op, const OpTable& ops,
                                   const Instruction& piece, ChildRun run) const {
  const LevelCost& lc = level(l);
  if (lc.leaf) return static_cast<double>(leaf_cycles(op, piece, lc.unit));
  // A child that must wait for an earlier piece's write-back cannot overlap its own loads with
  // the pieces before it: its whole run (node_cycles: fill and drain included), not its time
  // as one instruction alone (quick_cycles) or in a run of them (steady_cycles).
  auto child_cycles = [&](const Instruction& c, ChildRun r) {
    if (r == ChildRun::whole) return node_cycles(l + 1, op, ops, c, true);
    if (r == ChildRun::steady) return steady_cycles(l + 1, op, ops, c);
    return quick_cycles(l + 1, op, ops, c);
  };
  // The children of one split run at once: the largest sets the time.
  // (Only the root splits a reduce dim beside parallel dims, and the root is not estimated.)
  if (const std::optional<Instruction> child = largest_child(l, op, ops, piece))
    return child_cycles(*child, run) * lc.child_clock_ratio;
  // A reduce dim split across the children (parallel's fallback), combined by the LFU. The
  // partial results of successive pieces share the node's scratch memory, so their children do
  // not overlap them: each runs alone even in a run of pieces. Children that write no scratch
  // (a merge: each sorts its slice of the output) overlap a run's pieces as a parallel split's
  // do, and the LFU's work (the RD stage) then overlaps the next piece's execution: in the
  // steady state the longer of the two.
  const ParallelSplit split =
      parallel(op, ops, localize(op, piece, 0).local, lc.fanout, 0, this, l);
  const bool apart = split.scratch_bytes == 0 && !split.reductions.empty();
  const ChildRun child_run = run == ChildRun::steady && !apart ? ChildRun::quick : run;
  double children = 0;
  for (const Instruction& c : split.children)
    children = std::max(children, child_cycles(c, child_run));
  children *= lc.child_clock_ratio;
  const double reduce = reduction_cycles(l, split.reductions);
  return run == ChildRun::steady && apart ? std::max(children, reduce) : children + reduce;
}

double CostModel::reduction_cycles(int l, const std::vector<Instruction>& reductions) const {
  const int64_t tp = l < 0 ? root_.lfu_throughput : level(l).lfu_throughput;
  double cycles = 0;
  for (const Instruction& r : reductions) cycles += static_cast<double>(lfu_cycles(r, tp));
  return cycles;
}

double CostModel::inputs_bound(int l, const OpDef& op, const OpTable& ops,
                               const Instruction& piece) const {
  const std::optional<Instruction> child = largest_child(l, op, ops, piece);
  if (!child) return 0;
  double bytes = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::in && operand_is_read(op, *child, o))
      bytes += static_cast<double>(child->operands[o].stored_bytes());
  return bytes / level(l + 1).bytes_per_cycle * level(l).child_clock_ratio;
}

std::optional<Instruction> CostModel::largest_child(int l, const OpDef& op, const OpTable& ops,
                                                    const Instruction& piece) const {
  const std::vector<int64_t> ext = dim_extents(op, piece);
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == DimKind::parallel && ext[d] > 1)
      return largest_part(op, piece, parallel_parts(l, op, ops, piece, level(l).fanout));
  return std::nullopt;
}

double CostModel::tiling_cycles(int l, const OpDef& op, const OpTable& ops,
                                const Instruction& instr, const std::vector<int64_t>& tile,
                                double at_least, bool in_run) const {
  auto& cache = tiling_cache_.at(static_cast<size_t>(l));
  const LevelCost& lc = level(l);
  in_run = in_run && lc.leaf && lc.overlap;
  PackedKey packed;
  put_planning_key(op, instr, packed);
  for (int64_t t : tile) packed.push_back(t);
  packed.push_back(in_run);
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const std::vector<int64_t> ext = dim_extents(op, instr);
  // reduce_parts: the pieces that accumulate onto one output tile. The pieces of a "reduce:
  // merge" dim do not (each sorts its own chunk of the output, as independent as a parallel
  // dim's); the runs they leave are merged after the last (finalize, below).
  double pieces = 1, reduce_parts = 1, finalize = 0;
  std::vector<int64_t> len(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) {
    const int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    len[d] = parts == 0 ? 0 : ceil_div(ext[d], parts);
    pieces *= static_cast<double>(parts);
    if (op.dims[d].kind != DimKind::reduce) continue;
    if (op.combine_fn(op.dims[d], instr.attrs) != "merge") {
      reduce_parts *= static_cast<double>(parts);
    } else if (parts > 1) {
      // plan_sequential's finalize work, as the node runs it once its pieces have landed: the
      // merge's input loaded, merged (the LFU; a leaf's unit), its output written back, in turn.
      const Instruction merge = merge_runs(op, ops, instr, parts);
      const OpDef& mop = ops.get(merge.opcode);
      double read = 0, written = 0;
      piece_traffic(mop, merge, read, written);
      const double combine = static_cast<double>(lc.leaf ? leaf_cycles(mop, merge, lc.unit)
                                                         : lfu_cycles(merge, lc.lfu_throughput));
      finalize += 2 * lc.latency_cycles + (read + written) / lc.bytes_per_cycle + combine;
    }
  }
  const Instruction piece = worst_case_piece(op, instr, len);
  // Inputs whole in every piece are loaded once, with the first; pieces past the first along a
  // reduce dim also read the output they accumulate onto.
  // At a node under the root, a static input a later instruction reads again is found there in
  // the permutation table: its load is not charged to this one (reused_inputs). Deeper, a view
  // lies in the parent's memory, where the root's lookahead does not see whether it recurs,
  // but for a constant that recurs alike (recurring_inputs) down to the levels the root allows.
  const uint32_t found = l == 0 ? instr.reused : l < instr.recur_levels ? instr.recurs : 0;
  double stat = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (!(found >> o & 1) && input_stays_whole(op, instr, ext, tile, o))
      stat += static_cast<double>(align_up(instr.operands[o].stored_bytes(), kTileAlign));
  double read = 0, written = 0;
  piece_traffic(op, piece, read, written);
  // accumulated: the output a later piece along a reduce dim reads back; held: what of `read`
  // is output (an instruction that itself accumulates), which a resident tile's later pieces
  // do not load again.
  double accumulated = 0, held = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    if (op.operands[o].role != OperandRole::out || op.operands[o].read_if.empty()) continue;
    const double b = static_cast<double>(piece.operands[o].stored_bytes());
    (operand_is_read(op, piece, o) ? held : accumulated) += b;
  }
  // A piece's load leaves out the static inputs it reads (those it does not read, such as an
  // epilogue's bias on a piece that only accumulates, are not in `read`).
  double stat_read = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (input_stays_whole(op, instr, ext, tile, o) && operand_is_read(op, piece, o))
      stat_read += static_cast<double>(align_up(instr.operands[o].stored_bytes(), kTileAlign));
  // fin: what the last piece of each output tile loads beyond the others (its `final` reduce
  // attributes set: a fused epilogue's bias and residual, unless static), which `piece`, the
  // first of a split reduce dim, does not read.
  double fin = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.epilogue_only(o) && operand_is_read(op, instr, o) && !operand_is_read(op, piece, o) &&
        !input_stays_whole(op, instr, ext, tile, o))
      fin += static_cast<double>(piece.operands[o].stored_bytes());
  const double ld = lc.latency_cycles + std::max(0.0, read - stat_read) / lc.bytes_per_cycle;
  // An accumulating piece's load beside `ld`: one in reduce_parts - 1 reads `fin` too.
  const double ld_fin = reduce_parts > 1 ? fin / (reduce_parts - 1) / lc.bytes_per_cycle : 0;
  const double wb = lc.latency_cycles + written / lc.bytes_per_cycle;
  const double dec = static_cast<double>(lc.decode_cycles);
  const double first = pieces / reduce_parts;
  const bool resident = lc.resident && resident_split(op, instr, tile);
  // In a run, the next instruction goes on beside this one when it continues this one's held
  // tile (every piece accumulates onto one output tile: a single resident group, in a run of
  // pieces of one sum) or when both fit the memory at once. An instruction that completes a sum
  // it did not continue (a reduce dim's `final` attribute set, no accumulate attribute: its
  // epilogue applied to the whole sum) is not in a run of pieces of one sum.
  bool overlapped = false, continues = false;
  if (in_run) {
    NodeBudget whole{0, 1, lc.name};  // a leaf's: its static inputs once, N sub-blocks
    whole.capacity = lc.capacity;
    whole.depth = lc.depth;
    const bool held_group = lc.hold && resident && pieces == reduce_parts;
    const bool accumulates = starting_instruction(op, instr).has_value();
    bool whole_sum = false;
    for (const DimDef& dd : op.dims)
      whole_sum = whole_sum || (dd.kind == DimKind::reduce && dd.final_index >= 0 &&
                                instr.attrs[static_cast<size_t>(dd.final_index)] != 0);
    whole_sum = whole_sum && !accumulates;
    // An accumulating instruction in one held group continues the tile the one before kept
    // (which wrote nothing back): its first piece does not load it.
    continues = held_group && accumulates;
    const uint64_t cost = tiling_cost(op, ops, instr, tile, whole);
    overlapped = (held_group && !whole_sum) ||
                 cost + (whole_sum ? static_footprint(op, instr, tile) : cost) <= lc.capacity;
  }
  // The first sweep over the output tiles pipelines. A piece that accumulates reads its output
  // tile, and a node's LD waits for every earlier piece in flight that writes what it reads:
  // with `hazards: spans` every one whose write-back span meets it (the strided tiles of one
  // output do), so each such piece runs alone, load, execute and write-back in turn; with
  // `tiles` only the piece of its own tile, a sweep earlier, which is done when a sweep holds
  // more pieces than are in flight.
  // ex: a piece's execution alone (the first's); ex_s: in the pipeline's steady state, where
  // the children overlap the pieces' instructions (ChildRun::steady); ex_acc: an accumulating
  // piece's (below). The time grows with each (in floating point too), so with all 0 it is a
  // lower bound.
  // A piece's load and write-back in the pipeline's steady state: flowing_cycles.
  auto flowing = [&](double t) { return flowing_cycles(lc, t); };
  const double ld_s = flowing(ld), wb_s = posted_cycles(lc, wb);
  // On a pipelined link, when every piece finds a free sub-block (no more than `depth`), they
  // are all requested at the start: after the first, their loads' latency has passed while
  // the loads ahead moved, and none waits for a sub-block.
  const double ramp_n = lc.pipelined && pieces <= lc.depth ? first - 1 : 0;
  const double ld_r = ld - lc.latency_cycles;
  auto pieces_time = [&](double ex, double ex_s, double ex_acc) {
    // A piece holds its sub-block from its load to the end of its write-back: `depth` of them
    // in flight at most.
    const double occupied = (ld + ex + (lc.posted ? wb_s : wb)) / lc.depth;
    const double steady = std::max({ld_s, ex_s, wb_s, dec, occupied});
    const double ramp = std::max({ld_r, ex_s, wb_s, dec});
    // The first piece: its load, execution and write-back in turn, or, overlapped with the
    // instructions around it, a period.
    const double ld_h = continues ? ld - held / lc.bytes_per_cycle : ld;
    const double head = overlapped ? std::max({flowing(ld_h), ex, wb_s, dec}) : ld_h + ex + wb;
    if (resident) {
      // Resident partial sums: no piece reloads its output tile, so none waits for a
      // write-back, and one write-back serves the reduce_parts pieces of a tile.
      return stat / lc.bytes_per_cycle + head +
             ramp_n * std::max({ld_r, ex_s, wb_s / reduce_parts, dec}) +
             (first - 1 - ramp_n) * std::max({ld_s, ex_s, wb_s / reduce_parts, dec, occupied}) +
             (pieces - first) * std::max({flowing(ld - held / lc.bytes_per_cycle + ld_fin), ex_acc,
                                          wb_s / reduce_parts, dec});
    }
    if (lc.tile_hazards && first > lc.depth) {
      const double acc_steady =
          std::max({flowing(ld + accumulated / lc.bytes_per_cycle + ld_fin), ex_s, wb_s, dec});
      return stat / lc.bytes_per_cycle + head + ramp_n * ramp + (first - 1 - ramp_n) * steady +
             (pieces - first) * acc_steady;
    }
    const double serial = (ld + accumulated / lc.bytes_per_cycle + ld_fin) + ex_acc + wb;
    return stat / lc.bytes_per_cycle + head + ramp_n * ramp + (first - 1 - ramp_n) * steady +
           (pieces - first) * serial;
  };
  auto total = [&](double ex, double ex_s, double ex_acc) {
    return pieces_time(ex, ex_s, ex_acc) + finalize;
  };
  // A tiling that cannot come below at_least is not estimated further (nor cached).
  if (const double bound = total(0, 0, 0); bound >= at_least) return bound;
  const double ex = execute_cycles(l, op, ops, piece);
  const double ex_s = execute_cycles(l, op, ops, piece, ChildRun::steady);
  // At an inner node a piece that accumulates onto an output tile runs on children that read
  // that tile back and so wait for the write-back of the piece before it (estimated only where
  // the time uses it).
  double ex_acc = ex;
  if (!lc.leaf && reduce_parts > 1 && (resident || !(lc.tile_hazards && first > lc.depth))) {
    // Those children's whole runs are the costliest part to estimate: not estimated (nor the
    // tiling cached) where the time without them already reaches at_least.
    if (const double bound = total(ex, ex_s, 0); bound >= at_least) return bound;
    Instruction later = piece;
    for (const OperandDef& od : op.operands)
      if (od.role == OperandRole::out && !od.read_if.empty())
        if (od.read_if_index >= 0) later.attrs[od.read_if_index] = 1;
    // Nor where it reaches at_least with them taken as no less than their largest child's
    // loading of its inputs (every tiling of it loads each input byte at least once).
    if (at_least < std::numeric_limits<double>::infinity())
      if (const double bound = total(ex, ex_s, inputs_bound(l, op, ops, later)); bound >= at_least)
        return bound;
    ex_acc = execute_cycles(l, op, ops, later, ChildRun::whole);
  }
  const double t = total(ex, ex_s, ex_acc);
  cache.emplace(std::move(packed), t);
  return t;
}

double CostModel::quick_cycles(int l, const OpDef& op, const OpTable& ops,
                               const Instruction& instr, double at_least) const {
  auto& cache = quick_cache_.at(static_cast<size_t>(l));
  PackedKey packed;
  put_shape_key(instr, packed);
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const LevelCost& lc = level(l);
  double read = 0, written = 0;
  piece_traffic(op, instr, read, written);
  const double move = std::max(read / lc.bytes_per_cycle, written / lc.bytes_per_cycle);
  // Without its execution: a lower bound (not cached).
  if (const double bound = move + 2 * lc.latency_cycles; bound >= at_least) return bound;
  // Its loads, execution and write-backs overlap only across its pieces: with the fewest
  // pieces that fit its sub-blocks, all but the longest stage's share of one piece stays
  // exposed (the first load, the last write-back); a piece alone runs them in turn.
  const double in = read / lc.bytes_per_cycle, out = written / lc.bytes_per_cycle;
  const double ex = execute_cycles(l, op, ops, instr);
  const double pieces = std::max(
      1.0, std::ceil((read + written) /
                     std::max(1.0, static_cast<double>(sub_block_bytes(lc.capacity, lc.depth)))));
  const double longest = std::max({in, ex, out});
  const double t = longest + (in + ex + out - longest) / pieces + 2 * lc.latency_cycles;
  cache.emplace(std::move(packed), t);
  return t;
}

double CostModel::steady_cycles(int l, const OpDef& op, const OpTable& ops,
                                const Instruction& instr) const {
  return cached_by_shape(steady_cache_.at(static_cast<size_t>(l)), instr, [&] {
    const LevelCost& lc = level(l);
    double read = 0, written = 0;
    piece_traffic(op, instr, read, written);
    return std::max({flowing_cycles(lc, lc.latency_cycles + read / lc.bytes_per_cycle),
                     execute_cycles(l, op, ops, instr, ChildRun::steady),
                     posted_cycles(lc, lc.latency_cycles + written / lc.bytes_per_cycle),
                     static_cast<double>(lc.decode_cycles),
                     quick_cycles(l, op, ops, instr) / lc.depth});
  });
}

double CostModel::node_cycles(int l, const OpDef& op, const OpTable& ops, const Instruction& instr,
                              bool in_run) const {
  auto& cache = node_cache_.at(static_cast<size_t>(l));
  PackedKey packed;
  put_planning_key(op, instr, packed);
  packed.push_back(in_run);
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const LevelCost& lc = level(l);
  NodeBudget budget{sub_block_bytes(lc.capacity, lc.depth), lc.fanout, lc.name};
  budget.model = this;
  budget.level = l;
  budget.resident = lc.resident;
  budget.run = in_run;
  std::optional<Instruction> start;
  if (in_run && lc.resident && policy_ == Policy::search) start = starting_instruction(op, instr);
  const Instruction& tiled = start ? *start : instr;
  std::vector<int64_t> tile;
  try {
    NodeBudget whole = budget;
    whole.capacity = lc.capacity;
    whole.depth = lc.depth;
    tile = choose_tiling(op, ops, tiled, lc.depth > 1 ? whole : budget);
  } catch (const ConfigError&) {
    tile = choose_tiling(op, ops, tiled, budget);
  }
  const double t =
      tiling_cycles(l, op, ops, instr, tile, std::numeric_limits<double>::infinity(), in_run);
  cache.emplace(std::move(packed), t);
  return t;
}

const std::vector<int64_t>& CostModel::parallel_parts(int l, const OpDef& op, const OpTable& ops,
                                                      const Instruction& piece, int fanout,
                                                      Choice choice) const {
  // Only a node's partitions for leaves are refined: the full estimate of an inner child is a
  // search of its own, and the root's child gets a program's instruction whole, not a run of
  // pieces (isa/decompose/README.md).
  const bool refine = choice == Choice::decide && l >= 0 && level(l + 1).leaf;
  auto& cache = parts_cache_.at(static_cast<size_t>(l + 1));  // the root is level -1
  PackedKey packed;
  put_shape_key(piece, packed);
  packed.push_back(fanout);
  packed.push_back(refine);
  if (auto it = cache.find(packed); it != cache.end()) return it->second;
  const std::vector<int64_t> ext = dim_extents(op, piece);
  if (const std::vector<int64_t>* pinned =
          pinned_ && pinned_->estimates ? pinned_parts(l) : nullptr)
    return cache.emplace(std::move(packed), pinned_partition(op, ext, *pinned)).first->second;
  // A piece that accumulates onto an output tile is split as the piece that starts it would be:
  // the pieces of one tile then give each child the same part of it, which the child holds from
  // one to the next (hold_partial_sums).
  if (level(l + 1).hold)
    if (const std::optional<Instruction> start = starting_instruction(op, piece)) {
      std::vector<int64_t> parts = parallel_parts(l, op, ops, *start, fanout, choice);
      return cache.emplace(std::move(packed), std::move(parts)).first->second;
    }
  // Each candidate judged by the estimated time of its largest child (children of one split
  // run at once). Ties: fewer children.
  // A reduce dim is split beside parallel dims only by the root, whose pieces are the program's
  // instructions, each one whole: below it, a node's successive pieces would share its scratch,
  // and their children could not overlap them, which this judgement, piece by piece, misses.
  const std::vector<std::vector<int64_t>> candidates =
      partition_candidates(op, piece, fanout, l < 0);
  // The best partition of parallel dims only, and the best that splits a reduce dim.
  struct Best {
    std::vector<int64_t> parts;
    double t = std::numeric_limits<double>::infinity();
    int64_t children = 1;
    // What a candidate must come below to be chosen; a child whose time is known to be at
    // least that is not estimated further.
    double needed(int64_t used) const {
      return used < children ? std::nextafter(t, std::numeric_limits<double>::infinity()) : t;
    }
    bool take(const std::vector<int64_t>& p, double time, int64_t used) {
      if (!(time < t || (time == t && used < children))) return false;
      parts = p;
      t = time;
      children = used;
      return true;
    }
  };
  Best parallel{candidates.front(), quick_cycles(l + 1, op, ops, piece), 1}, reduce;
  double reduce_lfu = 0;
  std::optional<Instruction> reduce_child;
  // Largest child's lengths -> its time, or a lower bound of it (then `exact` is false).
  struct Seen {
    double t = 0;
    bool exact = false;
  };
  std::map<std::vector<int64_t>, Seen> seen;
  // With `refine`, the candidates of parallel dims (exact quick estimates within kRefine of the
  // best: the pruning below spares none of them).
  struct Near {
    std::vector<int64_t> parts, len;
    int64_t used = 1;
  };
  std::vector<Near> near;
  const double margin = refine ? 1 + kRefine : 1;
  if (refine) {
    seen[ext] = Seen{parallel.t, true};  // the piece unsplit
    near.push_back({candidates.front(), ext, 1});
  }
  for (size_t c = 1; c < candidates.size(); ++c) {
    const std::vector<int64_t>& parts = candidates[c];
    int64_t used = 1;
    std::vector<int64_t> len(ext.size());
    for (size_t d = 0; d < ext.size(); ++d) {
      used *= parts[d];
      len[d] = ceil_div(ext[d], parts[d]);
    }
    if (splits_reduce(op, parts)) {
      // Its children's partials wait for the LFU, which runs at this node's clock.
      // Scratch past every operand, as a node places it.
      uint64_t past = 0;
      for (const TensorRef& t : piece.operands) past = std::max(past, t.byte_span().second);
      const ParallelSplit split = split_by_parts(op, ops, piece, parts, align_up(past, kTileAlign),
                                                 policy_ == Policy::search);
      if (split.scratch_bytes > root_.scratch_bytes) continue;
      const double ratio = l < 0 ? root_.child_clock_ratio : level(l).child_clock_ratio;
      const double lfu = reduction_cycles(l, split.reductions) / ratio;
      const double needed = std::min(parallel.needed(used), reduce.needed(used));
      const double t = quick_cycles(l + 1, op, ops, split.children.front(), needed - lfu) + lfu;
      if (t < needed && reduce.take(parts, t, used)) {
        reduce_lfu = lfu;
        reduce_child = split.children.front();
      }
      continue;
    }
    const double needed = parallel.needed(used) * margin;
    auto [it, fresh] = seen.try_emplace(len);
    if (fresh || (!it->second.exact && it->second.t < needed)) {
      const double t = quick_cycles(l + 1, op, ops, largest_part(op, piece, parts), needed);
      it->second = Seen{t, t < needed};
    }
    parallel.take(parts, it->second.t, used);
    if (refine && it->second.exact) near.push_back({parts, len, used});
  }
  // A quick estimate counts each operand of a child once, which the child's own tiling may
  // load more than once (its input again for each tile of its weights, when both do not fit
  // beside each other in one piece). The near candidates, the kRefined closest distinct
  // children in order of their quick estimates (ties: fewer children), are re-ranked by their
  // largest child's full estimate (node_cycles: its own tiling, in a run of this node's pieces).
  if (refine) {
    auto quick = [&](const Near& n) { return seen.at(n.len).t; };
    std::stable_sort(near.begin(), near.end(), [&](const Near& a, const Near& b) {
      return quick(a) < quick(b) || (quick(a) == quick(b) && a.used < b.used);
    });
    std::vector<const std::vector<int64_t>*> children;
    Best full;
    for (const Near& n : near) {
      if (quick(n) > parallel.t * margin || children.size() == kRefined) break;
      // A child of lengths already estimated: the same estimate, with no fewer children.
      if (std::any_of(children.begin(), children.end(), [&](auto* c) { return *c == n.len; }))
        continue;
      children.push_back(&n.len);
      full.take(n.parts, node_cycles(l + 1, op, ops, largest_part(op, piece, n.parts), true),
                n.used);
    }
    if (children.size() > 1) parallel.parts = full.parts;
  }
  // A reduce split leaves each child a whole output to accumulate its part of the sum onto,
  // which its own tiling may have to split serially: a quick estimate misses that. It is chosen
  // only where it also beats the best other partition on the children's full estimates.
  const bool reduce_wins =
      reduce_child &&
      (reduce.t < parallel.t || (reduce.t == parallel.t && reduce.children < parallel.children)) &&
      node_cycles(l + 1, op, ops, *reduce_child) + reduce_lfu <
          node_cycles(l + 1, op, ops, largest_part(op, piece, parallel.parts));
  const std::vector<int64_t>& best = reduce_wins ? reduce.parts : parallel.parts;
  return cache.emplace(std::move(packed), best).first->second;
}

}  // namespace fracsim::isa
