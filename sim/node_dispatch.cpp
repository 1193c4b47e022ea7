// The EX stage of an inner node: hand each child its instruction and wait for all of them.
//
// Folding (timing mode): children whose instructions are congruent (isa shapes, strides,
// attributes and operand overlaps equal; addresses aside), whose static-segment layout comes
// out the same and whose state below (permutation tables of their own children) is the same,
// behave identically to the cycle: they decompose alike, their transfers start and end at the
// same times, and they share the parent memory's bandwidth equally. Such a class is simulated
// once, by one simulated child standing for all of them (its transfers count `copies` times
// against the parent memory); the others follow it (MachineTree::fold: they mirror it, or,
// with a history of their own, get its counters and state below copied).
// Each child's own permutation table (keyed by addresses in this node's memory, which differ
// between members) is kept for every child individually: placing and invalidating are cheap
// table operations, not simulation.
//
// Overlap (LevelSpec::overlap of the level below): the EX stage issues a piece's instructions
// and passes the piece on; RD waits for them and ends the dispatch. The next piece's
// instructions go out beside the running ones (dispatch_beside) under the rules the README
// lists; all dispatches beside each other form one fold round, with the classes and simulated
// children of its first, which is why the groups that first dispatch saw must stay alike.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/node.h"
#include "sim/node_piece.h"

namespace fracsim::sim {
namespace {

// The views of this node's memory that a piece's children read.
std::vector<isa::TensorRef> local_reads(const isa::OpDef& op, const isa::Instruction& local) {
  std::vector<isa::TensorRef> views;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (isa::operand_is_read(op, local, o)) views.push_back(local.operands[o]);
  return views;
}

// Whether a span meets one of the views' spans.
bool span_meets(std::pair<uint64_t, uint64_t> s, const std::vector<isa::TensorRef>& views) {
  for (const isa::TensorRef& v : views)
    if (overlaps({s}, {v.byte_span()})) return true;
  return false;
}

// A plan whose sub-blocks are smaller than those of the cyclic segment the child rotates goes on
// rotating in that segment (Node::dispatch_beside): its sub-blocks as large as the segment's, each
// piece using what it needs of one. Pieces of a split whose lengths differ by one (the rows of
// a tiling that does not divide them) then continue where the earlier ones run instead of
// waiting for them to drain.
std::shared_ptr<const InstructionPlan> widened(std::shared_ptr<const InstructionPlan> plan,
                                               uint64_t subblock_bytes) {
  if (plan->subblock_bytes >= subblock_bytes) return plan;
  auto wide = std::make_shared<InstructionPlan>(*plan);
  wide->subblock_bytes = subblock_bytes;
  return wide;
}

// What a child's instruction holds while it runs: its static tiles and its cyclic segment.
ChildRun child_run(const InstructionPlan& plan, const SegmentLayout& layout, int depth, int first,
                   int accumulator) {
  ChildRun r;
  for (size_t s = 0; s < plan.requests.size(); ++s)
    r.busy.emplace_back(layout.local[s], layout.local[s] + plan.requests[s].bytes);
  for (const ResidentInput& k : layout.resident) r.busy.emplace_back(k.local, k.local + k.bytes);
  r.ring = layout.cyclic_base;
  r.ring_bytes = static_cast<uint64_t>(depth) * plan.subblock_bytes;
  r.busy.emplace_back(r.ring, r.ring + r.ring_bytes);
  r.first = first;
  r.accumulator = accumulator;
  r.pieces = plan.pieces.size();
  // Group k accumulates in the sub-block after group k - 1's (Node::id_step); each group ends
  // at a piece that does not hold its output.
  const std::vector<uint8_t>& h = plan.holds_output;
  if (!h.empty())
    r.last_accumulator =
        (accumulator + static_cast<int>(std::count(h.begin(), h.end(), uint8_t{0})) - 1) % depth;
  return r;
}

// The inputs of a child's instruction that lie whole in an entry of its table (an output it
// kept), each with a request appended to `requests` that holds the entry in place while the
// instruction runs.
std::vector<ResidentInput> resident_inputs(const isa::OpDef& op, const isa::Instruction& instr,
                                           const InstructionPlan& plan,
                                           const TensorPermutationTable& table,
                                           std::vector<StaticRequest>& requests) {
  std::vector<ResidentInput> found;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const isa::TensorRef& view = instr.operands[o];
    if (op.operands[o].role != isa::OperandRole::in || view.stored_bytes() == 0 ||
        !isa::operand_is_read(op, instr, o) ||
        std::count(plan.static_operands.begin(), plan.static_operands.end(), static_cast<int>(o)) >
            0)
      continue;
    if (const std::optional<ResidentView> e = table.containing(view)) {
      found.push_back({static_cast<int>(o), e->view,
                       static_cast<int64_t>(view.address) - static_cast<int64_t>(e->view.address),
                       e->local, e->bytes});
      requests.push_back({e->view, e->bytes, StaticUse::resident});
    }
  }
  return found;
}

// The layout of the plan's own requests, and the resident inputs whose entries it kept.
void settle_residents(SegmentLayout& layout, const InstructionPlan& plan,
                      std::vector<ResidentInput> found) {
  const size_t n = plan.requests.size();
  for (size_t k = 0; k < found.size(); ++k)
    if (layout.hit[n + k]) layout.resident.push_back(std::move(found[k]));
  layout.local.resize(n);
  layout.hit.resize(n);
  layout.room.resize(n);
}

void append_after(std::vector<int64_t>& key, const std::vector<After>& after) {
  for (const After& a : after) {
    key.push_back(static_cast<int64_t>(a.reads));
    key.push_back(a.writes ? 1 : 0);
  }
}

// How a child's instruction reads what its instruction before, still running, writes (the
// child's own read-after-write hazards): per read and output, the offset between the two views
// where their spans meet. Children alike in this meet their hazards at the same pieces.
void append_meets(std::vector<int64_t>& key, const isa::OpDef& op, const isa::Instruction& instr,
                  const isa::OpDef& before_op, const isa::Instruction& before) {
  for (const isa::TensorRef& r : local_reads(op, instr))
    for (size_t k = 0; k < before_op.operands.size(); ++k) {
      if (before_op.operands[k].role != isa::OperandRole::out) continue;
      const isa::TensorRef& w = before.operands[k];
      key.push_back(overlaps({r.byte_span()}, {w.byte_span()})
                        ? static_cast<int64_t>(r.address) - static_cast<int64_t>(w.address)
                        : INT64_MIN);
    }
}

// The parts of a layout a leaf's timing reads (Node::alike_layouts).
void append_hits(std::vector<int64_t>& key, const SegmentLayout& layout) {
  for (bool h : layout.hit) key.push_back(h ? 1 : 0);
  for (bool r : layout.room) key.push_back(r ? 1 : 0);
  key.push_back(layout.out_hit ? 1 : 0);
}

void append_layout(std::vector<int64_t>& key, const SegmentLayout& layout) {
  key.push_back(static_cast<int64_t>(layout.cyclic_base));
  for (uint64_t l : layout.local) key.push_back(static_cast<int64_t>(l));
  append_hits(key, layout);
  for (const ResidentInput& r : layout.resident) {
    key.insert(key.end(), {r.operand, r.offset, static_cast<int64_t>(r.local),
                           static_cast<int64_t>(r.bytes), static_cast<int64_t>(r.entry.dtype)});
    key.insert(key.end(), r.entry.shape.begin(), r.entry.shape.end());
    key.insert(key.end(), r.entry.strides.begin(), r.entry.strides.end());
  }
}

// The operand an instruction accumulates onto: its only output, when its pieces read it
// (-1 otherwise).
int accumulated_out(const isa::OpDef& op, const isa::Instruction& instr) {
  int out = -1;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    if (op.operands[o].role != isa::OperandRole::out) continue;
    if (out >= 0) return -1;
    out = static_cast<int>(o);
  }
  return out >= 0 && isa::operand_is_read(op, instr, static_cast<size_t>(out)) ? out : -1;
}

// Whether a piece's children receive a run of this node's pieces (NodeShape::run): its
// instruction is split into several.
bool runs_below(const Node::Piece& p) { return p.plan->pieces.size() > 1; }

// Whether the plan's pieces all accumulate into one resident tile, the whole output.
bool one_resident_group(const InstructionPlan& plan) {
  const std::vector<uint8_t>& h = plan.holds_output;
  return !h.empty() && h.back() == 0 &&
         std::all_of(h.begin(), h.end() - 1, [](uint8_t x) { return x != 0; });
}

}  // namespace

void Node::loaded_here(const Piece& p, const InstructionPlan& plan,
                       std::vector<StaticRequest>& requests) const {
  for (size_t k = 0; k < plan.requests.size(); ++k) {
    if (requests[k].use != StaticUse::room) continue;
    if (is_root_) {
      requests[k].use = StaticUse::load;
      continue;
    }
    const std::vector<int>& mine = p.plan->static_operands;
    const auto it = std::find(mine.begin(), mine.end(), plan.static_operands[k]);
    if (it != mine.end() && p.plan->requests[it - mine.begin()].use == StaticUse::load)
      requests[k].use = StaticUse::load;
  }
}

const std::pair<isa::Instruction, std::shared_ptr<const InstructionPlan>>& Node::class_entry(
    const isa::OpDef& op, const isa::Instruction& instr, size_t child, bool run) {
  auto& cache = ctx_.plans[level_ + 1];
  std::vector<int64_t> k = congruence_key(instr);
  k.push_back(run);
  isa::PackedKey key(k);
  auto it = cache.find(key);
  if (it == cache.end())
    it =
        cache
            .emplace(std::move(key),
                     std::make_pair(instr, std::make_shared<const InstructionPlan>(plan_instruction(
                                               op, *ctx_.ops, instr, child_shape(child, run)))))
            .first;
  return it->second;
}

std::shared_ptr<const InstructionPlan> Node::child_plan(const isa::OpDef& op,
                                                        const isa::Instruction& instr, size_t child,
                                                        bool run) {
  const auto& [made_for, plan] = class_entry(op, instr, child, run);
  if (made_for == instr) return plan;
  if (auto moved = translated_plan(*plan, made_for, instr))
    return std::make_shared<const InstructionPlan>(std::move(*moved));
  return std::make_shared<const InstructionPlan>(
      plan_instruction(op, *ctx_.ops, instr, child_shape(child, run)));
}

NodeShape Node::child_shape(size_t child, bool run) const {
  const MachineSpec& spec = *ctx_.spec;
  const int l = level_ + 1;
  const LevelSpec& ls = spec.levels[l];
  const int below = l + 1 < static_cast<int>(spec.levels.size()) ? spec.levels[l + 1].fanout : 1;
  return NodeShape{ls.memory.capacity,
                   ls.controller.pipeline_depth,
                   below,
                   ctx_.tree->path(child),
                   ctx_.model,
                   l,
                   ls.resident_partial_sums,
                   run,
                   below_keeps_whole_outputs()};
}

bool Node::below_keeps_whole_outputs() const {
  const LevelSpec& below = ctx_.spec->levels[level_ + 1];
  return below.keep_outputs && !below.is_leaf;
}

bool Node::alike_layouts(const SegmentLayout& a, const SegmentLayout& b) const {
  if (!leaves_below()) return a == b;
  return a.hit == b.hit && a.room == b.room && a.out_hit == b.out_hit;
}

void Node::append_alike_layout(std::vector<int64_t>& key, const SegmentLayout& layout) const {
  if (leaves_below())
    append_hits(key, layout);
  else
    append_layout(key, layout);
}

// Static tiles that several children miss in their tables and load with their first piece,
// at the same view of this node's memory, are broadcast: the lowest child of each such group
// reads them for all. Classes are split so that their members play the same parts (a member's
// part is its class's own: the same plan, alike layout and roles), each part's class planned
// for its own first member.
std::vector<std::shared_ptr<const Broadcast>> Node::plan_broadcasts(
    const isa::OpDef& op, const std::vector<isa::Instruction>& instrs,
    const std::vector<size_t>& child, std::vector<ChildClass>& classes,
    const std::vector<SegmentLayout>& layouts, bool run) {
  // Per view (its address, dtype, shape and strides), the (child, request) pairs that load it.
  std::map<std::vector<int64_t>, std::vector<std::pair<int, size_t>>> loaders;
  for (const ChildClass& k : classes) {
    const isa::Instruction& first = instrs[k.members[0]];
    for (size_t s = 0; s < k.plan->requests.size(); ++s) {
      // Loaded: a load request, or room this node holds valid bytes for (loaded_here).
      const StaticUse use = k.plan->requests[s].use;
      if (k.layout.hit[s] || k.layout.room[s] || (use != StaticUse::load && use != StaticUse::room))
        continue;
      const int o = k.plan->static_operands[s];
      for (int m : k.members) {
        isa::TensorRef v = k.plan->requests[s].view;
        v.address += instrs[m].operands[o].address - first.operands[o].address;
        loaders[isa::view_key(v)].emplace_back(m, s);
      }
    }
  }
  std::map<int, std::vector<uint8_t>> roles;  // children with a part
  for (auto& [key, group] : loaders) {
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end());
    for (size_t g = 0; g < group.size(); ++g) {
      const auto [m, s] = group[g];
      std::vector<uint8_t>& r = roles[m];
      if (r.empty()) {
        size_t c = 0;
        while (std::find(classes[c].members.begin(), classes[c].members.end(), m) ==
               classes[c].members.end())
          ++c;
        r.assign(classes[c].plan->requests.size(), Broadcast::kOwn);
      }
      r[s] = g == 0 ? Broadcast::kLead : Broadcast::kReceive;
    }
  }
  std::vector<ChildClass> split;
  std::vector<std::shared_ptr<const Broadcast>> out;
  if (roles.empty()) return std::vector<std::shared_ptr<const Broadcast>>(classes.size());
  for (ChildClass& k : classes) {
    std::vector<std::pair<std::vector<uint8_t>, std::vector<int>>> parts;  // roles -> members
    for (int m : k.members) {
      auto it = roles.find(m);
      std::vector<uint8_t> r = it == roles.end() ? std::vector<uint8_t>() : it->second;
      size_t i = 0;
      while (i < parts.size() && parts[i].first != r) ++i;
      if (i == parts.size()) parts.push_back({r, {}});
      parts[i].second.push_back(m);
    }
    for (auto& [r, members] : parts) {
      const int f = members.front();
      auto plan = f == k.members.front() ? k.plan : child_plan(op, instrs[f], child[f], run);
      std::shared_ptr<const Broadcast> b;
      if (!r.empty()) {
        auto bc = std::make_shared<Broadcast>();
        bc->role = r;
        bc->round = &pipe_->dispatches.back()->broadcast_round;
        bc->lead_copies = members.size();
        b = std::move(bc);
      }
      // Its first member's own layout: alike, not always equal, to the rest's (leaves).
      split.push_back({std::move(members), std::move(plan), layouts[f]});
      out.push_back(std::move(b));
    }
  }
  classes = std::move(split);
  return out;
}

// The children that keep their output tile for this node's next piece instead of writing it
// back (LevelSpec::hold_partial_sums): where the next piece accumulates onto the same tile
// (this node keeps its own there: Piece::holds_output) and gives each of them the very view it
// accumulates onto now, with a plan of one resident group in a cyclic segment of the same
// size, so that it finds the tile where it left it (SegmentLayout::out_hit).
std::vector<char> Node::holds_for(const Piece& p, const std::vector<size_t>& child) {
  const isa::OpDef& op = *p.op;
  const std::vector<isa::Instruction>& instrs = p.split.children;
  std::vector<char> hold(instrs.size(), 0);
  const LevelSpec& below = ctx_.spec->levels[level_ + 1];
  if (!below.hold_partial_sums || !below.keep_outputs || !p.holds_output ||
      !p.split.reductions.empty() || p.index + 1 >= p.plan->pieces.size())
    return hold;
  // The next piece as make_piece will give it: the same out tile (the accumulator), its own
  // shapes; a split does not depend on the inputs' addresses.
  const isa::Instruction& part = p.plan->pieces[p.index + 1];
  const bool run = runs_below(p);
  isa::Instruction next = p.local;
  next.attrs = part.attrs;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role != isa::OperandRole::out)
      next.operands[o] = part.operands[o].packed_at(p.local.operands[o].address);
  const isa::Instruction like = plan_like(*p.plan);
  const isa::ParallelSplit split =
      isa::parallel(op, *ctx_.ops, next, fanout_, 0, ctx_.model, level_, &like);
  if (split.children.size() != instrs.size() || !split.reductions.empty()) return hold;
  for (size_t i = 0; i < instrs.size(); ++i) {
    const isa::Instruction& later = split.children[i];
    const int o = accumulated_out(op, later);
    if (o < 0 || later.operands[o] != instrs[i].operands[o]) continue;
    // What decides it does not move with a plan's translation.
    const InstructionPlan& now = *class_entry(op, instrs[i], child[i], run).second;
    const InstructionPlan& then = *class_entry(op, later, child[i], run).second;
    hold[i] = one_resident_group(now) && one_resident_group(then) &&
              now.subblock_bytes == then.subblock_bytes;
  }
  return hold;
}

std::vector<std::vector<After>> Node::settles_for(const Piece& p) {
  const isa::OpDef& op = *p.op;
  const std::vector<isa::Instruction>& instrs = p.split.children;
  std::vector<std::vector<After>> after(instrs.size());
  if (!ctx_.spec->levels[level_ + 1].prefetch) return after;
  const HazardCheck check = ctx_.spec->hazards;
  const std::vector<isa::TensorRef> reads = local_reads(op, p.local);
  for (Piece* o : pipe_->in_flight) {
    if (o == &p) break;
    if (o->sent) continue;  // its data has left: nothing here waits for it
    const std::vector<isa::TensorRef> o_reads = local_reads(*o->op, o->local);
    if (!views_meet(reads, o->local_outs, check) &&
        !views_meet(p.local_outs, o->local_outs, check) &&
        !views_meet(p.local_outs, o_reads, check))
      continue;
    if (!o->settle) {
      o->settle = std::make_shared<Settle>();
      o->settle->outs = o->local_outs;
      o->settle->reads = o_reads;
      o->settle->computed = o->reduced;
      o->settle->computed_ps = o->reduced_ps;
    }
    const Settle& s = *o->settle;
    for (size_t i = 0; i < instrs.size(); ++i) {
      After a{o->settle};
      for (size_t k = 0; k < op.operands.size(); ++k) {
        const std::vector<isa::TensorRef> view{instrs[i].operands[k]};
        if (isa::operand_is_read(op, instrs[i], k) && views_meet(view, s.outs, check))
          a.reads |= operand_bit(k);
        if (op.operands[k].role == isa::OperandRole::out &&
            (views_meet(view, s.outs, check) || views_meet(view, s.reads, check)))
          a.writes = true;
      }
      after[i].push_back(std::move(a));
    }
  }
  return after;
}

void Node::dispatch(const Piece& p) {
  const bool run = runs_below(p);
  const isa::OpDef& op = *p.op;
  const std::vector<isa::Instruction>& instrs = p.split.children;
  const std::vector<std::pair<uint64_t, uint64_t>>& local_writes = p.local_writes;
  MachineTree& tree = *ctx_.tree;
  std::vector<size_t> child(instrs.size());
  for (size_t i = 0; i < instrs.size(); ++i) child[i] = tree.child(tree_node_, static_cast<int>(i));
  // A child that still holds, as its kept output, the tile its instruction accumulates onto
  // (found before the writes below drop it from the tables): where.
  std::vector<std::optional<uint64_t>> held(instrs.size());
  if (ctx_.spec->levels[level_ + 1].keep_outputs)
    for (size_t i = 0; i < instrs.size(); ++i)
      if (const int o = accumulated_out(op, instrs[i]); o >= 0)
        held[i] = tree.tpt(child[i]).lookup(instrs[i].operands[static_cast<size_t>(o)]);
  // Whatever this piece's children and LFU write here is stale in every permutation table.
  // Children write nowhere else here, so their write-backs drop nothing more: with prefetch
  // below, tiles of these views placed for a later piece before then are what its children
  // load once this piece has retired.
  for (const auto& w : local_writes) invalidate_children(w.first, w.second);
  // Children that relate differently to the unfinished pieces here are not alike.
  const std::vector<std::vector<After>> after = settles_for(p);
  const std::vector<char> hold = holds_for(p, child);

  std::vector<ChildClass> classes;
  const int child_depth = ctx_.spec->levels[level_ + 1].controller.pipeline_depth;
  // A child that kept its tile for this piece: the accumulator its first group continues.
  std::vector<int> continued(instrs.size(), -1);
  const bool holding = held_tiles_.size() == instrs.size();
  auto place_plain = [&](size_t i, const std::vector<StaticRequest>& requests,
                         const InstructionPlan& plan, TensorPermutationTable& table) {
    const uint64_t cyclic = child_depth * plan.subblock_bytes;
    // It continues in the cyclic segment it left (the same size: holds_for).
    if (holding && held_tiles_[i]) {
      const auto [ring, acc] = *held_tiles_[i];
      if (table.is_free(ring, ring + cyclic))
        if (auto layout = table.place_beside(requests, cyclic, {{ring, ring + cyclic}}, ring)) {
          layout->out_hit = true;
          continued[i] = acc;
          return *layout;
        }
    }
    // Its pieces accumulating into one tile: the cyclic segment placed where the tile is, the
    // tile's first accumulator, when that room is free.
    if (held[i] && one_resident_group(plan) && table.is_free(*held[i], *held[i] + cyclic))
      if (auto layout =
              table.place_beside(requests, cyclic, {{*held[i], *held[i] + cyclic}}, *held[i])) {
        layout->out_hit = true;
        return *layout;
      }
    return table.place(requests, cyclic);
  };
  const bool residents = below_keeps_whole_outputs();
  auto place = [&](size_t i, std::vector<StaticRequest> requests, const InstructionPlan& plan) {
    loaded_here(p, plan, requests);
    TensorPermutationTable& table = tree.tpt(child[i]);
    std::vector<ResidentInput> found;
    if (residents) found = resident_inputs(op, instrs[i], plan, table, requests);
    SegmentLayout layout = place_plain(i, requests, plan, table);
    settle_residents(layout, plan, std::move(found));
    return layout;
  };
  std::vector<SegmentLayout> layouts(instrs.size());
  if (!ctx_.fold) {
    for (size_t i = 0; i < instrs.size(); ++i) {
      auto plan = child_plan(op, instrs[i], child[i], run);
      layouts[i] = place(i, plan->requests, *plan);
      classes.push_back({{static_cast<int>(i)}, plan, layouts[i]});
    }
  } else {
    std::map<std::vector<int64_t>, std::vector<int>> congruent;  // key -> children, in order
    std::vector<const std::vector<int>*> order;
    for (size_t i = 0; i < instrs.size(); ++i) {
      auto [it, fresh] = congruent.try_emplace(congruence_key(instrs[i]));
      it->second.push_back(static_cast<int>(i));
      if (fresh) order.push_back(&it->second);
    }
    for (const std::vector<int>* group : order) {
      const int first = group->front();
      auto plan = child_plan(op, instrs[first], child[first], run);
      const size_t begin = classes.size();
      for (int i : *group) {
        SegmentLayout layout =
            place(i, translated_requests(*plan, instrs[first], instrs[i]), *plan);
        layouts[i] = layout;
        size_t c = begin;
        for (; c < classes.size(); ++c)
          if (alike_layouts(classes[c].layout, layout) &&
              after[classes[c].members[0]] == after[i] && hold[classes[c].members[0]] == hold[i] &&
              continued[classes[c].members[0]] == continued[i] &&
              tree.below_digest(child[classes[c].members[0]]) == tree.below_digest(child[i]) &&
              tree.same_below(child[classes[c].members[0]], child[i]))
            break;
        if (c == classes.size()) {
          // A class of its own; its pieces must name its own addresses.
          auto own = i == first ? plan : child_plan(op, instrs[i], child[i], run);
          classes.push_back({{}, own, std::move(layout)});
        }
        classes[c].members.push_back(i);
      }
    }
  }
  std::vector<std::shared_ptr<const Broadcast>> broadcasts(classes.size());
  Pipeline& q = *pipe_;
  q.dispatches.push_back(std::make_unique<Dispatch>());
  Dispatch& d = *q.dispatches.back();
  d.piece = &p;
  d.start = sc_core::sc_time_stamp();
  if (ctx_.spec->levels[level_ + 1].link.multicast && instrs.size() > 1)
    broadcasts = plan_broadcasts(op, instrs, child, classes, layouts, run);
  for (const auto& b : broadcasts)
    if (b && b->lead_copies > 0 &&
        std::find(b->role.begin(), b->role.end(), Broadcast::kLead) != b->role.end())
      ++d.broadcast_round.pending;

  // The simulated children: fixed ones, or nodes taken from the level's pool (lowest first).
  std::vector<Node*> runners;
  if (ctx_.fold) {
    std::set<Node*, ByPort>& pool = ctx_.pools[level_ + 1];
    if (pool.size() < classes.size())
      throw FoldPoolExhausted(fmt::format(
          "{}: folding needs {} simulated nodes at level {} but its pool has {} free",
          tree.path(tree_node_), classes.size(), ctx_.spec->levels[level_ + 1].name, pool.size()));
    const auto taken = std::next(pool.begin(), static_cast<long>(classes.size()));
    runners.assign(pool.begin(), taken);
    pool.erase(pool.begin(), taken);
  } else {
    for (const ChildClass& k : classes) runners.push_back(children_[k.members[0]]);
  }

  d.runners = std::move(runners);
  d.classes = classes;
  d.layouts = layouts;
  q.round = MachineTree::FoldRound{};
  for (const ChildClass& k : classes) {
    q.round.reps.push_back(child[k.members[0]]);
    q.round.members.emplace_back();
    for (int m : k.members) q.round.members.back().push_back(child[m]);
  }
  tree.fold(q.round);
  if (ctx_.spec->levels[level_ + 1].overlap) {
    // What a later piece's dispatch must fit beside, and the groups it must keep alike: the
    // children by instruction shape, layout and broadcast part (computed the same way whether
    // or not the run folds).
    d.runs.resize(instrs.size());
    std::map<std::vector<int64_t>, size_t> group_of;
    std::vector<std::vector<int>> groups;
    std::vector<std::vector<int64_t>> keys(instrs.size());
    for (size_t c = 0; c < classes.size(); ++c)
      for (int m : classes[c].members) {
        d.runs[m] =
            child_run(*classes[c].plan, layouts[m], child_depth, 0, std::max(continued[m], 0));
        std::vector<int64_t> key = congruence_key(instrs[m]);
        append_alike_layout(key, layouts[m]);
        if (broadcasts[c])
          key.insert(key.end(), broadcasts[c]->role.begin(), broadcasts[c]->role.end());
        append_after(key, after[m]);
        key.push_back(hold[m]);
        key.push_back(continued[m]);
        keys[m] = std::move(key);
      }
    for (size_t i = 0; i < instrs.size(); ++i) {
      auto [it, fresh] = group_of.try_emplace(keys[i], groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(static_cast<int>(i));
    }
    q.groups = std::move(groups);
  }
  // A child that kept its tile for this piece finds it where it left it.
  std::vector<std::optional<std::pair<uint64_t, int>>> kept(instrs.size());
  for (size_t c = 0; c < classes.size(); ++c)
    for (int m : classes[c].members) {
      FRACSIM_ASSERT(!holding || !held_tiles_[m] || continued[m] >= 0,
                     "{}: child {} kept its output tile for a piece that does not continue it",
                     name(), m);
      if (hold[m]) kept[m] = {layouts[m].cyclic_base, std::max(continued[m], 0)};
    }
  held_tiles_ = std::move(kept);
  d.children.remaining = static_cast<int64_t>(classes.size());
  for (size_t c = 0; c < classes.size(); ++c) {
    ChildClass& k = classes[c];
    Job job{instrs[k.members[0]],  k.plan,           k.layout,
            q.round.reps[c],       k.members.size(), &d.children,
            ctx_.fold ? port_ : 0, p.layer,          p.weight * k.members.size(),
            broadcasts[c]};
    job.after = after[k.members[0]];
    job.hold_out = hold[k.members[0]] != 0;
    job.first_accumulator = continued[k.members[0]];
    job.continues_tile = continued[k.members[0]] >= 0;
    d.runners[c]->submit(std::move(job));
  }
}

bool Node::dispatch_beside(const Piece& p) {
  const bool run = runs_below(p);
  const isa::OpDef& op = *p.op;
  const std::vector<isa::Instruction>& instrs = p.split.children;
  MachineTree& tree = *ctx_.tree;
  Pipeline& q = *pipe_;
  const Dispatch& last = *q.dispatches.back();
  if (instrs.size() != last.runs.size()) return false;
  // Children that have all finished are ended by RD in this very time step: the piece waits
  // for that and starts afresh, as it does when RD happens to end them first (the order of
  // the two within a time step must not decide).
  if (std::all_of(q.dispatches.begin(), q.dispatches.end(),
                  [](const auto& d) { return d->children.remaining == 0; }))
    return false;
  // A child's finalize work streams through its load channel after its last write-back,
  // where the next instruction's loads would be.
  for (const auto& d : q.dispatches)
    for (const ChildClass& k : d->classes)
      if (!k.plan->finalize.empty()) return false;
  // The children of different pieces are not ordered against each other by their own
  // pipelines: no piece outstanding may read or write what this one's children write, nor
  // write what they read; with prefetch below they may (what they load of it, and their
  // write-backs over it, wait until it has retired: Job::after), but not here, in the
  // partial results this node combines.
  const HazardCheck check = ctx_.spec->hazards;
  const std::vector<isa::TensorRef> reads = local_reads(op, p.local);
  const bool prefetch = ctx_.spec->levels[level_ + 1].prefetch;
  for (const auto& d : q.dispatches) {
    const Piece& o = *d->piece;
    const std::vector<isa::TensorRef> o_reads = local_reads(*o.op, o.local);
    if ((!prefetch &&
         (views_meet(p.local_outs, o.local_outs, check) || views_meet(reads, o.local_outs, check) ||
          views_meet(p.local_outs, o_reads, check))) ||
        overlaps({p.scratch}, o.local_writes) || overlaps({o.scratch}, p.local_writes) ||
        span_meets(p.scratch, o_reads) || span_meets(o.scratch, reads))
      return false;
  }
  // A child that would find in its memory, once its own earlier instruction ends, the very
  // views it reads (that one's outputs, LevelSpec::keep_outputs) waits for it when that saves
  // more bytes than the loads it could start early. Not one that holds its tile for this piece
  // (held_tiles_): it continues the tile in place beside the earlier instruction, or not at all
  // (below), and loads it in neither case.
  const bool holding = held_tiles_.size() == instrs.size();
  if (prefetch && ctx_.spec->levels[level_ + 1].keep_outputs)
    for (const auto& d : q.dispatches) {
      const isa::OpDef& o_op = *d->piece->op;
      const std::vector<isa::Instruction>& o_instrs = d->piece->split.children;
      for (size_t i = 0; i < instrs.size() && i < o_instrs.size(); ++i) {
        if (holding && held_tiles_[i]) continue;
        // Whether that instruction keeps its whole output (InstructionPlan::kept_out).
        bool whole = false;
        for (const ChildClass& k : d->classes)
          if (std::count(k.members.begin(), k.members.end(), static_cast<int>(i)) > 0)
            whole = k.plan->kept_out >= 0;
        uint64_t kept = 0, other = 0;
        for (const isa::TensorRef& r : local_reads(op, instrs[i])) {
          bool own = false;
          for (size_t k = 0; k < o_op.operands.size(); ++k)
            own = own || (o_op.operands[k].role == isa::OperandRole::out &&
                          (o_instrs[i].operands[k] == r ||
                           (whole && isa::view_within(o_instrs[i].operands[k], r, 0).has_value())));
          (own ? kept : other) += r.stored_bytes();
        }
        if (kept > 0 && kept >= other) return false;
      }
    }
  for (const auto& w : p.local_writes) invalidate_children(w.first, w.second);

  const int depth = ctx_.spec->levels[level_ + 1].controller.pipeline_depth;
  const size_t n = instrs.size();
  std::vector<size_t> child(n);
  // own: the child's plan; plan: the plan it runs (own, or own widened)
  std::vector<std::shared_ptr<const InstructionPlan>> own(n), plan(n);
  std::vector<std::vector<int64_t>> keys(n);
  std::vector<SegmentLayout> layout(n);
  std::vector<int> first(n, 0), accumulator(n, 0);
  std::vector<char> continues(n, 0), beside(n, 0);
  const std::vector<std::vector<After>> after = settles_for(p);
  for (size_t i = 0; i < n; ++i) child[i] = tree.child(p.tree_node, static_cast<int>(i));
  const std::vector<char> hold = holds_for(p, child);
  bool continued = true;  // every child keeping a tile for this piece continues it
  std::map<std::vector<int64_t>, size_t> planned;  // congruence key -> the child planned for it
  for (size_t i = 0; i < n; ++i) {
    keys[i] = congruence_key(instrs[i]);
    auto [it, fresh] = planned.try_emplace(keys[i], i);
    const size_t f = it->second;
    const ChildRun& before = last.runs[i];
    own[i] = fresh ? child_plan(op, instrs[i], child[i], run) : own[f];
    plan[i] = own[i];
    std::vector<StaticRequest> requests =
        fresh ? plan[i]->requests : translated_requests(*own[f], instrs[f], instrs[i]);
    loaded_here(p, *plan[i], requests);
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const auto& d : q.dispatches)
      busy.insert(busy.end(), d->runs[i].busy.begin(), d->runs[i].busy.end());
    uint64_t cyclic = static_cast<uint64_t>(depth) * plan[i]->subblock_bytes;
    // The same cyclic segment goes on rotating; another takes free space.
    std::optional<uint64_t> ring;
    if (cyclic == before.ring_bytes) ring = before.ring;
    TensorPermutationTable& table = tree.tpt(child[i]);
    table.begin_trial();  // ended for every child below, once they are known to be alike
    std::vector<ResidentInput> found;
    if (below_keeps_whole_outputs())
      found = resident_inputs(op, instrs[i], *plan[i], table, requests);
    // Beside what the instructions still running hold, when it fits: nothing waits. A plan of
    // smaller sub-blocks with no room for a segment of its own goes on rotating in the running
    // one (widened). Else as a drained node would place it: the child's load then waits for the
    // earlier pieces whose memory it overwrites to write back (Node::ld_step).
    std::optional<SegmentLayout> placed = table.place_beside(requests, cyclic, busy, ring);
    if (!placed && !ring) {
      std::shared_ptr<const InstructionPlan> wide =
          widened(own[i], before.ring_bytes / static_cast<uint64_t>(depth));
      if (wide != own[i] &&
          (placed = table.place_beside(requests, before.ring_bytes, busy, before.ring))) {
        plan[i] = std::move(wide);
        cyclic = before.ring_bytes;
        ring = before.ring;
      }
    }
    if (placed) {
      layout[i] = std::move(*placed);
      beside[i] = 1;
    } else {
      layout[i] = table.place(requests, cyclic);
      if (!(ring && layout[i].cyclic_base == *ring)) ring.reset();
    }
    settle_residents(layout[i], *plan[i], std::move(found));
    if (ring) first[i] = static_cast<int>((before.first + before.pieces) % depth);
    accumulator[i] = first[i];
    // A child keeping its tile for this piece continues it in the same accumulator, in the same
    // cyclic segment (its plan has sub-blocks of the same size: holds_for).
    if (holding && held_tiles_[i]) {
      if (ring && layout[i].cyclic_base == *ring) {
        layout[i].out_hit = true;
        accumulator[i] = before.accumulator;
        continues[i] = 1;
      } else {
        continued = false;
      }
    }
    // The rotation goes on where the last group of the instruction before, still draining,
    // accumulates: this one's first group takes the sub-block after, not waiting for that
    // write-back.
    if (!continues[i] && ring && layout[i].cyclic_base == *ring && !plan[i]->holds_output.empty() &&
        before.last_accumulator == first[i])
      accumulator[i] = (first[i] + 1) % depth;
    keys[i].push_back(static_cast<int64_t>(first[i]));
    keys[i].push_back(static_cast<int64_t>(accumulator[i]));
    keys[i].push_back(hold[i]);
    keys[i].push_back(ring ? 1 : 0);
    // Placed beside what runs, its loads overwrite nothing running; placed as a drained node
    // would, they wait for the pieces whose memory they overwrite, which the addresses decide.
    keys[i].push_back(beside[i]);
    keys[i].push_back(static_cast<int64_t>(plan[i]->subblock_bytes));  // widened or not
    if (beside[i]) {
      append_alike_layout(keys[i], layout[i]);
    } else {
      append_layout(keys[i], layout[i]);
      for (const auto& [b, e] : busy)
        keys[i].insert(keys[i].end(), {static_cast<int64_t>(b), static_cast<int64_t>(e)});
    }
    append_after(keys[i], after[i]);
  }
  bool fits = continued;
  for (const std::vector<int>& g : q.groups)
    for (int m : g)
      if (fits && keys[m] != keys[g.front()]) fits = false;
  for (size_t i = 0; i < n; ++i) tree.tpt(child[i]).end_trial(fits);
  if (!fits) return false;
  // Children of a group that read differently what their earlier instructions write wait for
  // this node's pieces instead (Job::parent_orders), all of them alike.
  std::vector<std::vector<int64_t>> meets(n);
  for (size_t i = 0; i < n; ++i)
    for (const auto& d : q.dispatches)
      append_meets(meets[i], op, instrs[i], *d->piece->op, d->piece->split.children[i]);
  bool parent_orders = false;
  for (const std::vector<int>& g : q.groups)
    for (int m : g) parent_orders = parent_orders || meets[m] != meets[g.front()];

  q.dispatches.push_back(std::make_unique<Dispatch>());
  Dispatch& d = *q.dispatches.back();
  const Dispatch& prev = *q.dispatches[q.dispatches.size() - 2];
  d.piece = &p;
  d.start = sc_core::sc_time_stamp();
  d.runners = prev.runners;
  d.runs.resize(n);
  for (size_t i = 0; i < n; ++i)
    d.runs[i] = child_run(*plan[i], layout[i], depth, first[i], accumulator[i]);
  d.layouts = layout;
  held_tiles_.assign(n, std::nullopt);
  for (size_t i = 0; i < n; ++i)
    if (hold[i]) held_tiles_[i] = {layout[i].cyclic_base, accumulator[i]};
  for (const ChildClass& k : prev.classes) {
    const int rep = k.members[0];
    // Its pieces must name the rep's own addresses.
    auto rep_plan =
        planned.at(congruence_key(instrs[rep])) == static_cast<size_t>(rep)
            ? plan[rep]
            : widened(child_plan(op, instrs[rep], child[rep], run), plan[rep]->subblock_bytes);
    d.classes.push_back({k.members, std::move(rep_plan), layout[rep]});
  }
  count(p, Counter::overlapped_pieces, 1);
  d.children.remaining = static_cast<int64_t>(d.classes.size());
  for (size_t c = 0; c < d.classes.size(); ++c) {
    const ChildClass& k = d.classes[c];
    const int rep = k.members[0];
    Job job{instrs[rep], k.plan, k.layout, q.round.reps[c], k.members.size(), &d.children,
            ctx_.fold ? port_ : 0, p.layer, p.weight * k.members.size(),
            // No broadcast: a static tile several children load moves to each over its own
            // link, since a broadcast needs every receiver at a common first load (a round) and
            // these children are still busy with the pieces before.
            nullptr};
    job.first_subblock = first[rep];
    if (accumulator[rep] != first[rep]) job.first_accumulator = accumulator[rep];
    job.continues_tile = continues[rep] != 0;
    job.after = after[rep];
    job.parent_orders = parent_orders;
    job.hold_out = hold[rep] != 0;
    d.runners[c]->submit(std::move(job));
  }
  return true;
}

void Node::dispatch_end(const Piece& p) {
  Pipeline& q = *pipe_;
  Dispatch& d = *q.dispatches.front();
  FRACSIM_ASSERT(d.piece == &p, "{}: dispatches out of order", name());
  // The fold round and the simulated children last until the last dispatch of a run beside
  // each other has ended.
  const bool last = q.dispatches.size() == 1;
  if (last) {
    if (ctx_.fold) ctx_.pools[level_ + 1].insert(d.runners.begin(), d.runners.end());
    ctx_.tree->unfold(q.round);
  }
  const LevelSpec& below = ctx_.spec->levels[level_ + 1];
  // Every child still holds the out tiles of its last pieces, unless a later instruction
  // already runs in its sub-blocks: its table keeps them, at the views of its own instruction
  // (a member's are its class's moved by its operands' offsets).
  if (below.keep_outputs && last) {
    MachineTree& tree = *ctx_.tree;
    const std::vector<isa::Instruction>& instrs = p.split.children;
    for (const ChildClass& k : d.classes) {
      const isa::Instruction& first = instrs[k.members[0]];
      // Where its rotation started; with resident partial sums, its first group's accumulator.
      const ChildRun* run = d.runs.empty() ? nullptr : &d.runs[k.members[0]];
      const int from = !run ? 0 : k.plan->holds_output.empty() ? run->first : run->accumulator;
      const std::vector<HeldOutput> held =
          held_outputs(*p.op, *k.plan, k.layout, below.controller.pipeline_depth, from);
      for (int m : k.members) {
        // A member that placed its tiles elsewhere (a leaf) keeps them where it placed them.
        std::vector<HeldOutput> own;
        if (!(d.layouts[m] == k.layout))
          own = held_outputs(*p.op, *k.plan, d.layouts[m], below.controller.pipeline_depth, from);
        for (HeldOutput h : d.layouts[m] == k.layout ? held : own) {
          h.view.address +=
              instrs[m].operands[h.operand].address - first.operands[h.operand].address;
          tree.tpt(tree.child(p.tree_node, m))
              .keep(h.view, h.local, h.bytes, k.plan->kept_out >= 0);
        }
      }
    }
  }
  q.dispatches.pop_front();
  q.dispatch_ended.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace fracsim::sim
