#include "sim/machine_tree.h"

namespace fracsim::sim {

MachineTree::MachineTree(const MachineSpec& spec) {
  const size_t depth = spec.levels.size();
  fanout_.assign(depth + 1, 0);
  for (size_t l = 0; l < depth; ++l) fanout_[l] = spec.levels[l].fanout;  // below level l - 1
  subtree_.assign(depth + 2, 0);
  for (size_t l = depth + 1; l-- > 0;)
    subtree_[l] = l == depth + 1 ? 0 : 1 + fanout_[l] * subtree_[l + 1];
  nodes_.resize(subtree_[0]);
  // Depth-first: a node, then each child's subtree in order.
  struct Frame {
    size_t id;
    int level;
    std::string path;
  };
  std::vector<Frame> stack{{0, -1, "root"}};
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    TreeNode& n = nodes_[f.id];
    n.path = f.path;
    n.level = f.level;
    if (f.level >= 0) n.tpt = TensorPermutationTable(spec.levels[f.level].memory.capacity);
    const int children = fanout_[f.level + 1];
    for (int i = children; i-- > 0;) {
      std::string path = f.path;
      path += '.';
      path += spec.levels[f.level + 1].name;
      path += std::to_string(i);
      stack.push_back({f.id + 1 + i * subtree_[f.level + 2], f.level + 1, std::move(path)});
    }
  }
}

std::vector<size_t> MachineTree::level_order() const {
  std::vector<size_t> order;
  order.reserve(nodes_.size());
  for (int l = -1; l + 1 < static_cast<int>(fanout_.size()); ++l)
    for (size_t id = 0; id < nodes_.size(); ++id)
      if (nodes_[id].level == l) order.push_back(id);
  return order;
}

void MachineTree::subtract_subtree_stats(size_t rep, size_t member) {
  const size_t n = subtree_[nodes_[rep].level + 1];
  for (size_t k = 0; k < n; ++k)
    for (size_t c = 0; c < nodes_[rep].stats.value.size(); ++c)
      nodes_[member + k].stats.value[c] -= nodes_[rep + k].stats.value[c];  // modulo 2^64
}

void MachineTree::add_subtree_stats(size_t rep, size_t member) {
  const size_t n = subtree_[nodes_[rep].level + 1];
  for (size_t k = 0; k < n; ++k) nodes_[member + k].stats += nodes_[rep + k].stats;
}

void MachineTree::copy_state_below(size_t rep, size_t member) {
  const size_t n = subtree_[nodes_[rep].level + 1];
  nodes_[member].below_digest = nodes_[rep].below_digest;
  for (size_t k = 1; k < n; ++k) {
    TreeNode& to = nodes_[member + k];
    const TreeNode& from = nodes_[rep + k];
    to.tpt = from.tpt;  // shares the entries until one side changes
    to.below_digest = from.below_digest;
  }
}

void MachineTree::update_below_digest(size_t id) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int i = 0; i < fanout(id); ++i) {
    const TreeNode& c = nodes_[child(id, i)];
    mix(c.tpt.digest());
    mix(c.below_digest);
  }
  nodes_[id].below_digest = h;
}

}  // namespace fracsim::sim
