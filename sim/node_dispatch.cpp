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
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/node.h"
#include "sim/node_piece.h"

namespace fracsim::sim {
std::shared_ptr<const InstructionPlan> Node::child_plan(const isa::OpDef& op,
                                                        const isa::Instruction& instr,
                                                        size_t child) {
  auto& cache = ctx_.plans[level_ + 1];
  std::vector<int64_t> key = congruence_key(instr);
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto plan = std::make_shared<const InstructionPlan>(
        plan_instruction(op, *ctx_.ops, instr, child_shape(child)));
    cache.emplace(std::move(key), std::make_pair(instr, plan));
    return plan;
  }
  if (it->second.first == instr) return it->second.second;
  if (auto moved = translated_plan(*it->second.second, it->second.first, instr))
    return std::make_shared<const InstructionPlan>(std::move(*moved));
  return std::make_shared<const InstructionPlan>(
      plan_instruction(op, *ctx_.ops, instr, child_shape(child)));
}

NodeShape Node::child_shape(size_t child) const {
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
                   ls.resident_partial_sums};
}

// Static tiles that several children miss in their tables and load with their first piece,
// at the same view of this node's memory, are broadcast: the lowest child of each such group
// reads them for all. Classes are split so that their members play the same parts (a member's
// part is its class's own: the same plan, layout and roles), each part's class planned for its
// own first member.
std::vector<std::shared_ptr<const Broadcast>> Node::plan_broadcasts(
    const isa::OpDef& op, const std::vector<isa::Instruction>& instrs,
    const std::vector<size_t>& child, std::vector<ChildClass>& classes) {
  // Per view (its address, dtype, shape and strides), the (child, request) pairs that load it.
  std::map<std::vector<int64_t>, std::vector<std::pair<int, size_t>>> loaders;
  for (const ChildClass& k : classes) {
    const isa::Instruction& first = instrs[k.members[0]];
    for (size_t s = 0; s < k.plan->requests.size(); ++s) {
      if (k.layout.hit[s]) continue;
      const int o = k.plan->static_operands[s];
      for (int m : k.members) {
        isa::TensorRef v = k.plan->requests[s].view;
        v.address += instrs[m].operands[o].address - first.operands[o].address;
        std::vector<int64_t> key{static_cast<int64_t>(v.address), static_cast<int64_t>(v.dtype)};
        key.insert(key.end(), v.shape.begin(), v.shape.end());
        key.insert(key.end(), v.strides.begin(), v.strides.end());
        loaders[key].emplace_back(m, s);
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
      auto plan = f == k.members.front() ? k.plan : child_plan(op, instrs[f], child[f]);
      std::shared_ptr<const Broadcast> b;
      if (!r.empty()) {
        auto bc = std::make_shared<Broadcast>();
        bc->role = r;
        bc->round = &pipe_->broadcast_round;
        bc->lead_copies = members.size();
        b = std::move(bc);
      }
      split.push_back({std::move(members), std::move(plan), k.layout});
      out.push_back(std::move(b));
    }
  }
  classes = std::move(split);
  return out;
}

void Node::dispatch(const Piece& p) {
  const isa::OpDef& op = *p.op;
  const std::vector<isa::Instruction>& instrs = p.split.children;
  const std::vector<std::pair<uint64_t, uint64_t>>& local_writes = p.local_writes;
  MachineTree& tree = *ctx_.tree;
  // Whatever this piece's children and LFU write here is stale in every permutation table.
  for (const auto& w : local_writes) invalidate_children(w.first, w.second);

  std::vector<size_t> child(instrs.size());
  for (size_t i = 0; i < instrs.size(); ++i) child[i] = tree.child(tree_node_, static_cast<int>(i));
  std::vector<ChildClass> classes;
  const int child_depth = ctx_.spec->levels[level_ + 1].controller.pipeline_depth;
  auto place = [&](size_t i, const std::vector<StaticRequest>& requests,
                   const InstructionPlan& plan) {
    return tree.tpt(child[i]).place(requests, child_depth * plan.subblock_bytes);
  };
  if (!ctx_.fold) {
    for (size_t i = 0; i < instrs.size(); ++i) {
      auto plan = child_plan(op, instrs[i], child[i]);
      classes.push_back({{static_cast<int>(i)}, plan, place(i, plan->requests, *plan)});
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
      auto plan = child_plan(op, instrs[first], child[first]);
      const size_t begin = classes.size();
      for (int i : *group) {
        SegmentLayout layout =
            place(i, translated_requests(*plan, instrs[first], instrs[i]), *plan);
        size_t c = begin;
        for (; c < classes.size(); ++c)
          if (classes[c].layout == layout &&
              tree.below_digest(child[classes[c].members[0]]) == tree.below_digest(child[i]))
            break;
        if (c == classes.size()) {
          // A class of its own; its pieces must name its own addresses.
          auto own = i == first ? plan : child_plan(op, instrs[i], child[i]);
          classes.push_back({{}, own, std::move(layout)});
        }
        classes[c].members.push_back(i);
      }
    }
  }
  std::vector<std::shared_ptr<const Broadcast>> broadcasts(classes.size());
  Pipeline& q = *pipe_;
  q.broadcast_round.pending = 0;
  if (ctx_.spec->levels[level_ + 1].link.multicast && instrs.size() > 1)
    broadcasts = plan_broadcasts(op, instrs, child, classes);
  for (const auto& b : broadcasts)
    if (b && b->lead_copies > 0 &&
        std::find(b->role.begin(), b->role.end(), Broadcast::kLead) != b->role.end())
      ++q.broadcast_round.pending;

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

  q.runners = std::move(runners);
  q.classes = classes;
  q.round = MachineTree::FoldRound{};
  for (const ChildClass& k : classes) {
    q.round.reps.push_back(child[k.members[0]]);
    q.round.members.emplace_back();
    for (int m : k.members) q.round.members.back().push_back(child[m]);
  }
  tree.fold(q.round);
  q.children_done.remaining = static_cast<int64_t>(classes.size());
  for (size_t c = 0; c < classes.size(); ++c) {
    ChildClass& k = classes[c];
    q.runners[c]->submit(Job{instrs[k.members[0]], k.plan, k.layout, q.round.reps[c],
                             k.members.size(), &q.children_done, ctx_.fold ? port_ : 0, p.layer,
                             p.weight * k.members.size(), broadcasts[c]});
  }
}

void Node::dispatch_end(const Piece& p) {
  Pipeline& q = *pipe_;
  if (ctx_.fold) ctx_.pools[level_ + 1].insert(q.runners.begin(), q.runners.end());
  q.runners.clear();
  ctx_.tree->unfold(q.round);
  const LevelSpec& below = ctx_.spec->levels[level_ + 1];
  if (below.keep_outputs) {
    // Every child still holds the out tiles of its last pieces: its table keeps them, at the
    // views of its own instruction (a member's are its class's moved by its operands' offsets).
    MachineTree& tree = *ctx_.tree;
    const std::vector<isa::Instruction>& instrs = p.split.children;
    for (const ChildClass& k : q.classes) {
      const isa::Instruction& first = instrs[k.members[0]];
      const std::vector<HeldOutput> held =
          held_outputs(*p.op, *k.plan, k.layout, below.controller.pipeline_depth);
      for (int m : k.members)
        for (HeldOutput h : held) {
          h.view.address +=
              instrs[m].operands[h.operand].address - first.operands[h.operand].address;
          tree.tpt(tree.child(p.tree_node, m)).keep(h.view, h.local, h.bytes);
        }
    }
  }
  q.classes.clear();
}

}  // namespace fracsim::sim
