// Every node of the machine as the report sees it, whether or not a SystemC Node simulates it:
// its path, counters and tensor permutation table. With folding, one simulated Node plays one
// tree node at a time and stands for the congruent others; their counters and state are
// copied from it. Nodes are numbered in depth-first pre-order, so a subtree is a contiguous
// range and every subtree rooted at one level has the same shape (copies are offset moves).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/machine_spec.h"
#include "sim/node_stats.h"
#include "sim/tensor_permutation_table.h"

namespace fracsim::sim {

struct TreeNode {
  std::string path;  // "root", "root.cluster0.core1"
  int level = -1;    // -1 for the root
  NodeStats stats;
  TensorPermutationTable tpt;  // keyed by views in the parent's memory (unused at the root)
  // Digest of the permutation tables of every node below (as of its last instruction): two
  // nodes with equal digests have children that behave alike.
  uint64_t below_digest = 0;
};

class MachineTree {
 public:
  explicit MachineTree(const MachineSpec& spec);

  size_t size() const { return nodes_.size(); }
  TreeNode& operator[](size_t id) { return nodes_[id]; }
  const TreeNode& operator[](size_t id) const { return nodes_[id]; }
  int fanout(size_t id) const { return fanout_[nodes_[id].level + 1]; }
  size_t child(size_t id, int i) const {
    return id + 1 + static_cast<size_t>(i) * subtree_[nodes_[id].level + 2];
  }
  // Node ids, the root first, then level by level (the report's order).
  std::vector<size_t> level_order() const;

  // Folding: `member` stands in for nothing while `rep` runs for both. Before the run,
  // subtract rep's counters from member's whole subtree; after it, add them back (the net is
  // what rep's subtree did meanwhile) and copy the state below rep to below member.
  void subtract_subtree_stats(size_t rep, size_t member);
  void add_subtree_stats(size_t rep, size_t member);
  void copy_state_below(size_t rep, size_t member);
  // Recomputes node `id`'s below_digest from its children.
  void update_below_digest(size_t id);

 private:
  std::vector<TreeNode> nodes_;
  std::vector<int> fanout_;      // [level + 1]: children of a node at that level (0 at leaves)
  std::vector<size_t> subtree_;  // [level + 1]: nodes in a subtree rooted at that level
};

}  // namespace fracsim::sim
