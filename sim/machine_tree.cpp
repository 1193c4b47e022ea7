#include "sim/machine_tree.h"

namespace fracsim::sim {

MachineTree::MachineTree(const MachineSpec& spec) {
  const size_t tiers = spec.levels.size() + 1;
  fanout_.assign(tiers, 0);
  for (size_t t = 0; t + 1 < tiers; ++t) fanout_[t] = spec.levels[t].fanout;
  begin_.assign(tiers + 1, 0);
  for (size_t t = 0, count = 1; t < tiers; count *= static_cast<size_t>(fanout_[t]), ++t)
    begin_[t + 1] = begin_[t] + count;
  subtree_.assign(tiers, 1);
  for (size_t t = tiers - 1; t-- > 0;) subtree_[t] = 1 + fanout_[t] * subtree_[t + 1];

  reports_.resize(begin_[tiers]);
  state_.resize(begin_[tiers]);
  reports_[0].path = "root";
  for (size_t t = 1; t < tiers; ++t) {
    const LevelSpec& ls = spec.levels[t - 1];
    const auto f = static_cast<size_t>(fanout_[t - 1]);
    for (size_t j = 0; j < begin_[t + 1] - begin_[t]; ++j) {
      NodeReport& n = reports_[begin_[t] + j];
      const std::string& parent = reports_[begin_[t - 1] + j / f].path;
      const std::string index = std::to_string(j % f);
      n.path.reserve(parent.size() + 1 + ls.name.size() + index.size());  // one allocation
      n.path += parent;
      n.path += '.';
      n.path += ls.name;
      n.path += index;
      n.level = static_cast<int>(t) - 1;
      state_[begin_[t] + j].tpt = TensorPermutationTable(ls.memory.capacity);
    }
  }
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
    for (size_t c = 0; c < reports_[to].stats.value.size(); ++c)
      reports_[to].stats.value[c] -= reports_[from].stats.value[c];  // modulo 2^64
  });
}

void MachineTree::add_subtree_stats(size_t rep, size_t member) {
  for_subtree_pairs(rep, member, 0,
                    [&](size_t to, size_t from) { reports_[to].stats += reports_[from].stats; });
}

void MachineTree::copy_state_below(size_t rep, size_t member) {
  state_[member].below_digest = state_[rep].below_digest;
  for_subtree_pairs(rep, member, 1, [&](size_t to, size_t from) {
    state_[to].tpt = state_[from].tpt;  // shares the entries until one side changes
    state_[to].below_digest = state_[from].below_digest;
  });
}

void MachineTree::update_below_digest(size_t id) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int i = 0; i < fanout(id); ++i) {
    const State& c = state_[child(id, i)];
    mix(c.tpt.digest());
    mix(c.below_digest);
  }
  state_[id].below_digest = h;
}

}  // namespace fracsim::sim
