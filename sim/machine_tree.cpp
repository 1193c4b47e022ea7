#include "sim/machine_tree.h"

#include <algorithm>

namespace fracsim::sim {

MachineTree::MachineTree(const MachineSpec& spec, uint64_t digest_mask)
    : digest_mask_(digest_mask) {
  const size_t tiers = spec.levels.size() + 1;
  fanout_.assign(tiers, 0);
  for (size_t t = 0; t + 1 < tiers; ++t) fanout_[t] = spec.levels[t].fanout;
  begin_.assign(tiers + 1, 0);
  for (size_t t = 0, count = 1; t < tiers; count *= static_cast<size_t>(fanout_[t]), ++t)
    begin_[t + 1] = begin_[t] + count;
  subtree_.assign(tiers, 1);
  for (size_t t = tiers - 1; t-- > 0;) subtree_[t] = 1 + fanout_[t] * subtree_[t + 1];
  names_.assign(1, "root");
  capacity_.assign(1, 0);
  for (const LevelSpec& ls : spec.levels) {
    names_.push_back(ls.name);
    capacity_.push_back(ls.memory.capacity);
  }

  slot_.assign(size(), kNoSlot);
  make_slot(0);
  // All nodes start alike: below the root, along the first child of each level, the other
  // children mirror the first (everything under a mirroring node is read through it).
  for (size_t p = 0; tier(p) + 1 < tiers; p = child(p, 0))
    for (int i = 0; i < fanout(p); ++i) {
      make_slot(child(p, i));
      if (i > 0) set_mirror(child(p, i), child(p, 0));
    }
}

MachineTree::Slot& MachineTree::make_slot(size_t id) {
  if (slot_[id] == kNoSlot) {
    slot_[id] = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back().tpt = TensorPermutationTable(capacity_[tier(id)]);
  }
  return slots_[slot_[id]];
}

void MachineTree::set_mirror(size_t id, size_t target) {
  clear_mirror(id);
  slots_[slot_[id]].mirror = target;
  slots_[slot_[target]].mirrored_by.push_back(id);
}

void MachineTree::clear_mirror(size_t id) {
  Slot& s = slots_[slot_[id]];
  if (s.mirror == kNone) return;
  std::vector<size_t>& by = slots_[slot_[s.mirror]].mirrored_by;
  by.erase(std::find(by.begin(), by.end(), id));
  s.mirror = kNone;
}

void MachineTree::materialize(size_t id) {
  const size_t t = mirror(id);
  if (t == kNone) return;
  clear_mirror(id);
  Slot& s = slots_[slot_[id]];
  const Slot& from = slots_[slot_[t]];
  s.stats = from.stats;
  s.below_digest = from.below_digest;
  for (int i = 0; i < fanout(id); ++i) {
    const size_t c = child(id, i), tc = child(t, i);
    make_slot(c).tpt = slots_[slot_[tc]].tpt;  // shares the entries until one side changes
    set_mirror(c, source(tc));
  }
}

template <typename Keep>
void MachineTree::detach_mirrors_of(size_t id, Keep&& keep) {
  const std::vector<size_t> by = slots_[slot_[id]].mirrored_by;
  for (size_t x : by)
    if (!keep(x)) materialize(x);
}

template <typename F>
void MachineTree::for_subtree(size_t id, F&& f) {
  const size_t t0 = tier(id);
  size_t width = 1;
  for (size_t t = t0; t < fanout_.size(); width *= static_cast<size_t>(fanout_[t]), ++t) {
    const size_t from = begin_[t] + (id - begin_[t0]) * width;
    for (size_t k = 0; k < width; ++k) f(from + k);
  }
}

void MachineTree::fold(FoldRound& round) {
  const size_t n = round.reps.size();
  // The histories, before any rep is made concrete.
  std::vector<size_t> rep_source(n);
  std::vector<std::vector<size_t>> member_source(n);
  for (size_t k = 0; k < n; ++k) {
    rep_source[k] = source(round.reps[k]);
    for (size_t m : round.members[k]) member_source[k].push_back(source(m));
  }
  for (size_t rep : round.reps) materialize(rep);
  std::vector<std::vector<size_t>> followers(n);
  round.own_history.clear();
  for (size_t k = 0; k < n; ++k) {
    const size_t rep = round.reps[k];
    for (size_t j = 0; j < round.members[k].size(); ++j) {
      const size_t m = round.members[k][j];
      if (m == rep) continue;
      if (mirror(m) != kNone && member_source[k][j] == rep_source[k]) {
        if (mirror(m) != rep) set_mirror(m, rep);
        followers[k].push_back(m);
      } else {
        round.own_history.emplace_back(rep, m);
      }
    }
  }
  for (size_t k = 0; k < n; ++k)
    detach_mirrors_of(round.reps[k], [&](size_t x) {
      return std::find(followers[k].begin(), followers[k].end(), x) != followers[k].end();
    });
  for (const auto& [rep, m] : round.own_history) {
    for_subtree(m, [&](size_t y) {
      materialize(y);
      detach_mirrors_of(y, [](size_t) { return false; });
    });
    for_subtree(rep, [&](size_t y) { materialize(y); });
    subtract_subtree_stats(rep, m);
  }
}

void MachineTree::unfold(const FoldRound& round) {
  for (const auto& [rep, m] : round.own_history) {
    for_subtree(rep, [&](size_t y) { materialize(y); });
    for_subtree(m, [&](size_t y) { detach_mirrors_of(y, [](size_t) { return false; }); });
    add_subtree_stats(rep, m);
    copy_state_below(rep, m);
  }
}

NodeReports MachineTree::reports() const {
  std::vector<NodeReport> entries;
  std::vector<uint32_t> entry_of(size()), entry_of_slot(slots_.size(), kNoSlot);
  // Tier by tier: a node reads the node at its place below its parent's source, or what that
  // one mirrors (the node itself when its parent is concrete).
  std::vector<uint32_t> above{0}, here;  // the sources of the previous tier's nodes, of this one's
  for (size_t t = 0; t + 1 < begin_.size(); ++t) {
    here.resize(begin_[t + 1] - begin_[t]);
    for (size_t j = 0; j < here.size(); ++j) {
      size_t src = 0;
      if (t > 0) {
        const auto f = static_cast<size_t>(fanout_[t - 1]);
        src = source(begin_[t] + (above[j / f] - begin_[t - 1]) * f + j % f);
      }
      here[j] = static_cast<uint32_t>(src);
      const uint32_t slot = slot_[src];
      if (entry_of_slot[slot] == kNoSlot) {
        entry_of_slot[slot] = static_cast<uint32_t>(entries.size());
        entries.push_back({static_cast<int>(t) - 1, slots_[slot].stats});
      }
      entry_of[begin_[t] + j] = entry_of_slot[slot];
    }
    std::swap(above, here);
  }
  return {std::move(entries), std::move(entry_of)};
}

std::string MachineTree::path(size_t id) const {
  std::vector<size_t> index;  // child index at each tier, deepest first
  size_t t = tier(id), j = id - begin_[t];
  for (; t > 0; --t) {
    const auto f = static_cast<size_t>(fanout_[t - 1]);
    index.push_back(j % f);
    j /= f;
  }
  std::string p = names_[0];
  for (size_t k = index.size(); k-- > 0;) {
    p += '.';
    p += names_[index.size() - k];
    p += std::to_string(index[k]);
  }
  return p;
}

std::vector<std::string> node_paths(const MachineSpec& spec) {
  std::vector<std::string> paths{"root"};
  size_t first = 0, count = 1;  // the previous level's nodes in `paths`
  for (const LevelSpec& ls : spec.levels) {
    const size_t begin = paths.size();
    paths.reserve(begin + count * static_cast<size_t>(ls.fanout));
    for (size_t j = 0; j < count; ++j)
      for (int c = 0; c < ls.fanout; ++c) {
        const std::string& parent = paths[first + j];
        std::string p;
        p.reserve(parent.size() + ls.name.size() + 8);
        p += parent;
        p += '.';
        p += ls.name;
        p += std::to_string(c);
        paths.push_back(std::move(p));
      }
    first = begin;
    count *= static_cast<size_t>(ls.fanout);
  }
  return paths;
}

size_t MachineTree::preorder(size_t id) const {
  size_t t = tier(id), j = id - begin_[t], number = 0;
  for (; t > 0; --t) {
    const auto f = static_cast<size_t>(fanout_[t - 1]);
    number += 1 + (j % f) * subtree_[t];  // child j % f of its parent
    j /= f;
  }
  return number;
}

template <typename F>
void MachineTree::for_subtree_pairs(size_t rep, size_t member, size_t first_tier, F&& f) {
  const size_t t0 = tier(rep);
  size_t width = 1;  // descendants of one node at tier t
  for (size_t t = t0; t < fanout_.size(); width *= static_cast<size_t>(fanout_[t]), ++t) {
    if (t - t0 < first_tier) continue;
    const size_t from = begin_[t] + (rep - begin_[t0]) * width;
    const size_t to = begin_[t] + (member - begin_[t0]) * width;
    for (size_t k = 0; k < width; ++k) f(to + k, from + k);
  }
}

void MachineTree::subtract_subtree_stats(size_t rep, size_t member) {
  for_subtree_pairs(rep, member, 0, [&](size_t to, size_t from) {
    NodeStats& s = slots_[slot_[to]].stats;
    const NodeStats& r = slots_[slot_[from]].stats;
    for (size_t c = 0; c < s.value.size(); ++c) s.value[c] -= r.value[c];  // modulo 2^64
  });
}

void MachineTree::add_subtree_stats(size_t rep, size_t member) {
  for_subtree_pairs(rep, member, 0, [&](size_t to, size_t from) { stats(to) += stats(from); });
}

void MachineTree::copy_state_below(size_t rep, size_t member) {
  slots_[slot_[member]].below_digest = slots_[slot_[rep]].below_digest;
  for_subtree_pairs(rep, member, 1, [&](size_t to, size_t from) {
    Slot& s = slots_[slot_[to]];
    const Slot& r = slots_[slot_[from]];
    s.tpt = r.tpt;  // shares the entries until one side changes
    s.below_digest = r.below_digest;
  });
}

void MachineTree::update_below_digest(size_t id) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int i = 0; i < fanout(id); ++i) {
    mix(tpt(child(id, i)).digest());
    mix(below_digest(child(id, i)));
  }
  slots_[slot_[id]].below_digest = h & digest_mask_;
}

bool MachineTree::same_below(size_t a, size_t b) const {
  const size_t sa = source(a), sb = source(b);
  if (sa == sb) return true;  // one mirrors the other, or both the same node
  for (int i = 0; i < fanout(sa); ++i) {
    const size_t ca = child(sa, i), cb = child(sb, i);
    if (!slots_[slot_[ca]].tpt.same_contents(slots_[slot_[cb]].tpt) || !same_below(ca, cb))
      return false;
  }
  return true;
}

}  // namespace fracsim::sim
