#include "sim/instruction_plan.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/decompose/localize.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"
#include "sim/leaf_unit.h"

namespace fracsim::sim {
namespace {

bool overlaps(std::pair<uint64_t, uint64_t> a, std::pair<uint64_t, uint64_t> b) {
  return a.first < b.second && b.first < a.second;
}

// Inputs whose view is the same in every piece and that no output of the instruction touches;
// one that no piece reads is given room alone (StaticUse::room), so that the instructions of a
// run keep one layout whether or not they read it.
InstructionPlan with_static_operands(const isa::OpDef& op, const isa::Instruction& instr,
                                     isa::SequentialPlan seq) {
  InstructionPlan plan;
  plan.tile = std::move(seq.tile);
  plan.pieces = std::move(seq.pieces);
  plan.finalize = std::move(seq.finalize);
  plan.holds_output = std::move(seq.holds_output);
  for (size_t o = 0; o < op.operands.size(); ++o) {
    if (op.operands[o].role != isa::OperandRole::in) continue;
    const isa::TensorRef& view = plan.pieces.front().operands[o];
    if (view.stored_bytes() == 0) continue;
    bool same = std::all_of(plan.pieces.begin(), plan.pieces.end(),
                            [&](const isa::Instruction& p) { return p.operands[o] == view; });
    for (size_t w = 0; w < op.operands.size() && same; ++w)
      if (op.operands[w].role == isa::OperandRole::out &&
          overlaps(instr.operands[w].byte_span(), instr.operands[o].byte_span()))
        same = false;
    if (!same) continue;
    const uint64_t bytes = isa::align_up(view.stored_bytes(), isa::kTileAlign);
    const bool read =
        std::any_of(plan.pieces.begin(), plan.pieces.end(),
                    [&](const isa::Instruction& p) { return isa::operand_is_read(op, p, o); });
    plan.static_operands.push_back(static_cast<int>(o));
    plan.requests.push_back(StaticRequest{view, bytes, read ? StaticUse::load : StaticUse::room});
  }
  return plan;
}

uint64_t static_bytes(const InstructionPlan& plan) {
  uint64_t s = 0;
  for (const StaticRequest& r : plan.requests) s += r.bytes;
  return s;
}

// The local memory the plan takes: its static tiles and N sub-blocks.
uint64_t memory_need(const InstructionPlan& plan, const NodeShape& node) {
  return static_bytes(plan) + node.pipeline_depth * plan.subblock_bytes;
}

bool fits(const InstructionPlan& plan, const NodeShape& node) {
  return memory_need(plan, node) <= node.capacity;
}

// Whether the plan holds static an input other than a fused epilogue's.
bool keeps_reused_input(const isa::OpDef& op, const InstructionPlan& plan) {
  return std::any_of(plan.static_operands.begin(), plan.static_operands.end(),
                     [&](int o) { return !op.epilogue_only(static_cast<size_t>(o)); });
}

// The largest footprint of the plan's pieces (pieces of equal shape are measured once).
uint64_t largest_piece(const isa::OpDef& op, const isa::OpTable& ops, const InstructionPlan& plan,
                       int fanout, const isa::CostModel* model, int level) {
  std::set<std::vector<int64_t>> seen;
  uint64_t most = 0;
  for (const isa::Instruction& p : plan.pieces) {
    std::vector<int64_t> key = congruence_key(p);
    if (!seen.insert(key).second) continue;
    most = std::max(most, isa::piece_footprint(op, ops, p, fanout, model, level));
  }
  return most;
}

// The bytes of a piece's out tiles, each aligned (what an accumulator holds of it).
uint64_t out_tile_bytes(const isa::OpDef& op, const isa::Instruction& piece) {
  uint64_t bytes = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == isa::OperandRole::out)
      bytes += isa::align_up(piece.operands[o].stored_bytes(), isa::kTileAlign);
  return bytes;
}

// A plan with resident partial sums: the accumulator (the largest out tiles) and the largest
// rest of a piece, side by side in every sub-block.
void size_accumulator(const isa::OpDef& op, const isa::OpTable& ops, InstructionPlan& plan,
                      const NodeShape& node) {
  std::set<std::vector<int64_t>> seen;
  uint64_t acc = 0, rest = 0;
  for (const isa::Instruction& p : plan.pieces) {
    if (!seen.insert(congruence_key(p)).second) continue;
    const uint64_t out = out_tile_bytes(op, p);
    acc = std::max(acc, out);
    rest =
        std::max(rest, isa::piece_footprint(op, ops, p, node.fanout, node.model, node.level) - out);
  }
  plan.accumulator_bytes = acc;
  plan.subblock_bytes = acc + rest - static_bytes(plan);
}

// A sub-block is as large as the largest piece needs, no larger: what is left over keeps
// earlier static tiles resident for later instructions.
InstructionPlan finished(const isa::OpDef& op, const isa::OpTable& ops, InstructionPlan plan,
                         const NodeShape& node) {
  if (!plan.holds_output.empty())
    size_accumulator(op, ops, plan, node);
  else
    plan.subblock_bytes =
        largest_piece(op, ops, plan, node.fanout, node.model, node.level) - static_bytes(plan);
  return plan;
}

// The plan of a given tiling.
InstructionPlan tiled_plan(const isa::OpDef& op, const isa::OpTable& ops,
                           const isa::Instruction& instr, const std::vector<int64_t>& tile,
                           const NodeShape& node) {
  return finished(
      op, ops,
      with_static_operands(op, instr, isa::plan_tiling(op, ops, instr, tile, node.resident)), node);
}

InstructionPlan plan_for(const isa::OpDef& op, const isa::OpTable& ops,
                         const isa::Instruction& instr, const NodeShape& node) {
  const int n = node.pipeline_depth;
  const uint64_t budget = isa::sub_block_bytes(node.capacity, n);
  auto finish = [&](InstructionPlan plan) { return finished(op, ops, std::move(plan), node); };
  if (const std::vector<int64_t>* tile =
          node.model ? node.model->pinned_tile(node.level, instr) : nullptr) {
    InstructionPlan plan = tiled_plan(op, ops, instr, *tile, node);
    const uint64_t need = memory_need(plan, node);
    if (need > node.capacity)
      throw ConfigError(
          fmt::format("{}: {}: the pinned tiling [{}] needs {} bytes but the local memory holds {}",
                      node.where, op.name, fmt::join(*tile, ", "), need, node.capacity));
    return plan;
  }
  // First choice: a tiling sized against the whole memory, keeping reused inputs whole in the
  // static segment (loaded once) and N sub-blocks for the rest. A fused epilogue's operand (a
  // bias) held static is no reason for it: the tiling may have cut its pieces to a sliver
  // around it. Under `search` it is a candidate beside the sub-block plans below, the one of
  // least estimated time taken (ties: this order).
  const bool search = node.model && node.model->policy() == isa::Policy::search;
  std::optional<InstructionPlan> best;
  double best_cycles = 0;
  auto consider = [&](InstructionPlan plan) {
    const double t =
        search ? node.model->tiling_cycles(node.level, op, ops, instr, plan.tile,
                                           std::numeric_limits<double>::infinity(), node.run)
               : 0;
    if (!best || t < best_cycles) {
      best = std::move(plan);
      best_cycles = t;
    }
  };
  if (n > 1) {
    isa::NodeBudget whole{budget, node.fanout, node.where};
    whole.capacity = node.capacity;
    whole.depth = n;
    whole.model = node.model;
    whole.level = node.level;
    whole.resident = node.resident;
    whole.run = node.run;
    try {
      InstructionPlan staged =
          finish(with_static_operands(op, instr, isa::plan_sequential(op, ops, instr, whole)));
      if (keeps_reused_input(op, staged) && fits(staged, node)) {
        if (!search) return staged;
        consider(std::move(staged));
      }
    } catch (const fracsim::ConfigError&) {
      // No such tiling: the sub-block plans below decide (and name the problem if none fits).
    }
  }
  isa::NodeBudget sub{budget, node.fanout, node.where};
  sub.model = node.model;
  sub.level = node.level;
  sub.resident = node.resident;
  sub.run = node.run;
  InstructionPlan safe =
      finish(with_static_operands(op, instr, isa::plan_sequential(op, ops, instr, sub)));
  const uint64_t s = static_bytes(safe);
  const uint64_t tight_budget =
      s == 0 || n == 1 ? 0 : isa::sub_block_bytes(node.capacity - s, n) + s;
  if (tight_budget > budget) {
    sub.bytes = tight_budget;
    InstructionPlan tight =
        finish(with_static_operands(op, instr, isa::plan_sequential(op, ops, instr, sub)));
    if (fits(tight, node)) {
      consider(std::move(tight));
      if (!search) return std::move(*best);
    }
  }
  consider(std::move(safe));
  return std::move(*best);
}

// The plan with its whole output held in the static segment, where InstructionPlan::kept_out
// says so.
InstructionPlan with_kept_output(const isa::OpDef& op, const isa::Instruction& instr,
                                 InstructionPlan plan, const NodeShape& node) {
  // One piece's output stays whole in its sub-block anyway (held_outputs). An instruction of a
  // run is a slice of its parent's piece: the parent's next piece is another slice, and what a
  // later instruction reads of this one's output it reads through the parent.
  if (!node.keep_whole_output || node.run || plan.pieces.size() < 2 || !plan.holds_output.empty() ||
      !plan.finalize.empty())
    return plan;
  int out = -1;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    if (op.operands[o].role != isa::OperandRole::out) continue;
    if (out >= 0) return plan;
    out = static_cast<int>(o);
  }
  if (out < 0 || isa::operand_is_read(op, instr, static_cast<size_t>(out))) return plan;
  const isa::TensorRef& view = instr.operands[static_cast<size_t>(out)];
  if (view.stored_bytes() == 0) return plan;
  // Each piece's part must be one dense run of the whole's copy, as its own tile in a sub-block
  // is: a strided part's byte span would cover its neighbours' and order pieces that do not
  // depend on each other.
  for (const isa::Instruction& piece : plan.pieces) {
    const auto part = isa::view_within(view, piece.operands[static_cast<size_t>(out)], 0);
    if (!part) return plan;
    const auto span = part->byte_span();
    if (span.second - span.first != part->stored_bytes()) return plan;
  }
  InstructionPlan kept = plan;
  kept.kept_out = out;
  kept.static_operands.push_back(out);
  kept.requests.push_back(
      StaticRequest{view, isa::align_up(view.stored_bytes(), isa::kTileAlign), StaticUse::output});
  // It leaves room beside it for an instruction planned alike (LevelSpec::overlap runs the next
  // one there while this one drains).
  return 2 * memory_need(kept, node) <= node.capacity ? kept : plan;
}

InstructionPlan plan_without_kept_output(const isa::OpDef& op, const isa::OpTable& ops,
                                         const isa::Instruction& instr, const NodeShape& node) {
  if (!node.resident) return plan_for(op, ops, instr, node);
  if (node.run && node.model && node.model->policy() == isa::Policy::search &&
      !node.model->pinned_tile(node.level, instr))
    if (const std::optional<isa::Instruction> start = isa::starting_instruction(op, instr)) {
      InstructionPlan plan =
          tiled_plan(op, ops, instr, plan_instruction(op, ops, *start, node).tile, node);
      if (fits(plan, node)) return plan;
    }
  // Accumulator and the rest of a piece sized apart can exceed the largest piece the tiling was
  // sized by (pieces of two lengths); such a plan keeps no partial sums resident.
  InstructionPlan plan = plan_for(op, ops, instr, node);
  if (plan.holds_output.empty() || fits(plan, node)) return plan;
  NodeShape plain = node;
  plain.resident = false;
  return plan_for(op, ops, instr, plain);
}

}  // namespace

InstructionPlan plan_instruction(const isa::OpDef& op, const isa::OpTable& ops,
                                 const isa::Instruction& instr, const NodeShape& node) {
  return with_kept_output(op, instr, plan_without_kept_output(op, ops, instr, node), node);
}

uint64_t root_subblock_bytes(const MachineSpec& spec, uint64_t reserved) {
  const uint64_t capacity = spec.root.memory.capacity;
  if (reserved >= capacity) return 0;
  return (capacity - reserved) / static_cast<uint64_t>(spec.root.controller.pipeline_depth) /
         isa::kTileAlign * isa::kTileAlign;
}

void ReuseMarks::apply(isa::Instruction& instr) const {
  instr.reused = reused;
  instr.recurs = recurs;
  instr.recur_levels = recur_levels;
}

std::vector<ReuseMarks> root_reuse_marks(const MachineSpec& spec, const isa::OpTable& ops,
                                         const isa::Program& program) {
  const size_t n = program.instructions.size();
  std::vector<ReuseMarks> marks(n);
  if (spec.decomposer != isa::Policy::search) return marks;
  const std::vector<uint32_t> reused = isa::reused_inputs(ops, program);
  const std::vector<uint64_t> live = isa::reused_bytes_live(ops, program);
  const std::vector<uint32_t> recurs = isa::recurring_inputs(ops, program);
  const std::vector<uint64_t> live_recurs = isa::reused_bytes_live(ops, program, &recurs);
  // Whether the nodes of level l, all of them, hold `bytes` in half their memory.
  auto holds = [&](size_t l, uint64_t bytes) {
    uint64_t nodes = 1;
    for (size_t k = 0; k <= l; ++k) nodes *= static_cast<uint64_t>(spec.levels[k].fanout);
    return bytes <= nodes * (spec.levels[l].memory.capacity / 2);
  };
  for (size_t i = 0; i < n; ++i) {
    if (!holds(0, live[i])) continue;
    marks[i].reused = reused[i];
    size_t levels = 1;
    while (recurs[i] != 0 && levels < spec.levels.size() && holds(levels, live_recurs[i])) ++levels;
    if (levels > 1) {
      marks[i].recurs = recurs[i];
      marks[i].recur_levels = static_cast<uint8_t>(levels);
    }
  }
  return marks;
}

uint32_t passed_recurs(const InstructionPlan& plan, const isa::Instruction& instr) {
  uint32_t held = 0;
  for (int o : plan.static_operands) held |= uint32_t{1} << o;
  return instr.recurs & held;
}

isa::CostModel cost_model(const MachineSpec& spec, uint64_t root_reserved) {
  std::vector<isa::LevelCost> levels;
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const LevelSpec& ls = spec.levels[l];
    const MemorySpec& parent = l == 0 ? spec.root.memory : spec.levels[l - 1].memory;
    isa::LevelCost c;
    c.name = ls.name;
    c.capacity = ls.memory.capacity;
    c.depth = ls.controller.pipeline_depth;
    c.fanout = l + 1 < spec.levels.size() ? spec.levels[l + 1].fanout : 1;
    c.leaf = ls.is_leaf;
    // Every sibling loading at once shares the parent memory equally.
    const double share = static_cast<double>(parent.bandwidth) / ls.fanout;
    c.bytes_per_cycle = std::min(static_cast<double>(ls.link.bandwidth), share) /
                        static_cast<double>(ls.controller.clock);
    const uint64_t period = ls.controller.period_ps();
    c.latency_cycles =
        static_cast<double>((ls.link.latency + parent.latency + period - 1) / period);
    c.pipelined = ls.link.pipelined;
    c.posted = ls.link.posted_writes;
    c.lfu_throughput = ls.controller.lfu_throughput;
    c.decode_cycles = ls.controller.decode_cycles;
    c.resident = ls.resident_partial_sums;
    c.tile_hazards = spec.hazards == HazardCheck::tiles;
    c.overlap = ls.overlap;
    c.hold = ls.hold_partial_sums && ls.keep_outputs;
    if (!ls.is_leaf)
      c.child_clock_ratio = static_cast<double>(ls.controller.clock) /
                            static_cast<double>(spec.levels[l + 1].controller.clock);
    else
      c.unit = leaf_params(ls);
    levels.push_back(std::move(c));
  }
  isa::RootCost root;
  root.lfu_throughput = spec.root.controller.lfu_throughput;
  root.scratch_bytes = root_subblock_bytes(spec, root_reserved);
  if (!spec.levels.empty())
    root.child_clock_ratio = static_cast<double>(spec.root.controller.clock) /
                             static_cast<double>(spec.levels[0].controller.clock);
  return isa::CostModel(spec.decomposer, std::move(levels), root);
}

InstructionPlan root_plan(const isa::Instruction& instr) {
  InstructionPlan plan;
  plan.pieces.push_back(instr);
  return plan;
}

isa::Instruction plan_like(const InstructionPlan& plan) {
  isa::Instruction like = plan.pieces.front();
  like.reused = 0;
  like.recurs = passed_recurs(plan, like);
  return like;
}

std::vector<StaticRequest> translated_requests(const InstructionPlan& plan,
                                               const isa::Instruction& from,
                                               const isa::Instruction& to) {
  std::vector<StaticRequest> out = plan.requests;
  for (size_t i = 0; i < out.size(); ++i) {
    const int o = plan.static_operands[i];
    out[i].view.address += to.operands[o].address - from.operands[o].address;
  }
  return out;
}

std::optional<InstructionPlan> translated_plan(const InstructionPlan& plan,
                                               const isa::Instruction& from,
                                               const isa::Instruction& to) {
  InstructionPlan out = plan;
  for (isa::Instruction& p : out.pieces)
    for (size_t o = 0; o < p.operands.size(); ++o)
      p.operands[o].address += to.operands[o].address - from.operands[o].address;
  // Finalize work names whole operands of the instruction (a merge over its output).
  for (isa::Instruction& f : out.finalize)
    for (isa::TensorRef& t : f.operands) {
      size_t o = 0;
      while (o < from.operands.size() && from.operands[o] != t) ++o;
      if (o == from.operands.size()) return std::nullopt;
      t.address += to.operands[o].address - from.operands[o].address;
    }
  out.requests = translated_requests(plan, from, to);
  return out;
}

std::vector<HeldOutput> held_outputs(const isa::OpDef& op, const InstructionPlan& plan,
                                     const SegmentLayout& layout, int depth, int first_subblock) {
  std::vector<HeldOutput> out;
  const size_t n = plan.pieces.size();
  if (plan.kept_out >= 0) {
    const size_t s = plan.requests.size() - 1;
    out.push_back({plan.kept_out, plan.requests[s].view, layout.local[s], plan.requests[s].bytes});
    return out;
  }
  if (!plan.holds_output.empty()) {
    // The last piece of each group wrote its accumulator back.
    std::vector<std::pair<size_t, uint64_t>> ends;  // (piece, accumulator address)
    uint64_t group = 0;
    for (size_t i = 0; i < n; ++i) {
      if (plan.holds_output[i]) continue;
      ends.emplace_back(
          i, layout.cyclic_base + ((first_subblock + group) % depth) * plan.subblock_bytes);
      ++group;
    }
    for (size_t e = ends.size() > static_cast<size_t>(depth) ? ends.size() - depth : 0;
         e < ends.size(); ++e) {
      uint64_t at = ends[e].second;
      const isa::Instruction& part = plan.pieces[ends[e].first];
      for (size_t o = 0; o < op.operands.size(); ++o) {
        if (op.operands[o].role != isa::OperandRole::out) continue;
        const uint64_t bytes = isa::align_up(part.operands[o].stored_bytes(), isa::kTileAlign);
        if (bytes > 0) out.push_back({static_cast<int>(o), part.operands[o], at, bytes});
        at += bytes;
      }
    }
    return out;
  }
  for (size_t i = n > static_cast<size_t>(depth) ? n - depth : 0; i < n; ++i) {
    const isa::Instruction& part = plan.pieces[i];
    uint64_t at = layout.cyclic_base + ((first_subblock + i) % depth) * plan.subblock_bytes;
    for (size_t o = 0; o < op.operands.size(); ++o) {
      if (std::find(plan.static_operands.begin(), plan.static_operands.end(),
                    static_cast<int>(o)) != plan.static_operands.end())
        continue;
      const isa::TensorRef local = part.operands[o].packed_at(at);
      const uint64_t bytes = isa::align_up(local.stored_bytes(), isa::kTileAlign);
      if (op.operands[o].role == isa::OperandRole::out && bytes > 0)
        out.push_back({static_cast<int>(o), part.operands[o], at, bytes});
      at += bytes;
    }
  }
  return out;
}

std::vector<int64_t> congruence_key(const isa::Instruction& instr) {
  const size_t n = instr.operands.size();
  size_t size = 5 + instr.attrs.size() + n * (n - 1);
  for (const isa::TensorRef& t : instr.operands) size += 2 + 2 * t.shape.size();
  std::vector<int64_t> key;
  key.reserve(size);
  key.push_back(instr.opcode);
  key.push_back(static_cast<int64_t>(instr.attrs.size()));
  key.insert(key.end(), instr.attrs.begin(), instr.attrs.end());
  key.push_back(instr.reused);
  key.push_back(instr.recurs);
  key.push_back(instr.recur_levels);
  for (const isa::TensorRef& t : instr.operands) {
    key.push_back(static_cast<int64_t>(t.dtype));
    key.push_back(t.rank());
    key.insert(key.end(), t.shape.begin(), t.shape.end());
    key.insert(key.end(), t.strides.begin(), t.strides.end());
  }
  // Operands that overlap must overlap the same way (their hazards and static choice follow).
  std::vector<std::pair<uint64_t, uint64_t>> spans(n);
  for (size_t a = 0; a < n; ++a) spans[a] = instr.operands[a].byte_span();
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      const bool o = overlaps(spans[a], spans[b]);
      key.push_back(o ? 1 : 0);
      if (o)
        key.push_back(static_cast<int64_t>(instr.operands[b].address - instr.operands[a].address));
    }
  return key;
}

void check_smallest_piece(const isa::OpDef& op, const isa::OpTable& ops,
                          const isa::Instruction& instr, const NodeShape& node,
                          std::set<std::vector<int64_t>>* fits) {
  const std::vector<int64_t> ext = isa::dim_extents(op, instr);
  isa::PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
  for (size_t d = 0; d < ext.size(); ++d) {
    const isa::DimKind k = op.dims[d].kind;
    if (k == isa::DimKind::parallel || k == isa::DimKind::reduce)
      r.len[d] = std::min<int64_t>(ext[d], 1);
  }
  const isa::Instruction piece = isa::slice_instruction(op, instr, r);
  std::vector<int64_t> key;
  if (fits) {
    key = congruence_key(piece);
    if (fits->count(key)) return;
  }
  isa::sequential(op, ops, piece,
                  isa::NodeBudget{isa::sub_block_bytes(node.capacity, node.pipeline_depth),
                                  node.fanout, node.where});
  if (fits) fits->insert(std::move(key));
}

std::string instruction_text(const isa::OpDef& op, const isa::Instruction& instr) {
  std::string s = op.name;
  for (size_t o = 0; o < instr.operands.size() && o < op.operands.size(); ++o)
    s += fmt::format(" {}={}", op.operands[o].name, isa::tensor_str(instr.operands[o]));
  for (size_t a = 0; a < instr.attrs.size() && a < op.attributes.size(); ++a)
    s += fmt::format(" {}={}", op.attributes[a].name, instr.attrs[a]);
  return s;
}

}  // namespace fracsim::sim
