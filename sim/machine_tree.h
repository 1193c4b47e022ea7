// Every node of the machine as the report sees it, whether or not a SystemC Node simulates it:
// its path, counters and tensor permutation table. With folding, one simulated Node plays one
// tree node at a time and stands for the congruent others; their counters and state are
// copied from it.
//
// Nodes are numbered level by level (the root 0, then the first level's nodes in order, ...):
// the report's order, so that the counters are built in place and handed to the RunResult
// without a copy (5461 nodes at 4096 leaves: a large share of a folded run's time goes to
// touching their memory once).
// The descendants of a node at any level below are a contiguous range of that level, of the
// same width for every node of its level (copies between congruent subtrees are range moves).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/node_stats.h"
#include "sim/tensor_permutation_table.h"

namespace fracsim::sim {

class MachineTree {
 public:
  explicit MachineTree(const MachineSpec& spec);

  size_t size() const { return reports_.size(); }
  const std::string& path(size_t id) const { return reports_[id].path; }  // "root.cluster0"
  int level(size_t id) const { return reports_[id].level; }               // -1 for the root
  NodeStats& stats(size_t id) { return reports_[id].stats; }
  // Keyed by views in the parent's memory (unused at the root).
  TensorPermutationTable& tpt(size_t id) { return state_[id].tpt; }
  // Digest of the permutation tables of every node below (as of its last instruction): two
  // nodes with equal digests have children that behave alike.
  uint64_t below_digest(size_t id) const { return state_[id].below_digest; }

  int fanout(size_t id) const { return fanout_[tier(id)]; }
  size_t child(size_t id, int i) const {
    const size_t t = tier(id);
    return begin_[t + 1] + (id - begin_[t]) * fanout_[t] + static_cast<size_t>(i);
  }
  // The node's number in depth-first pre-order (a node, then each child's subtree): trace
  // tracks keep that numbering.
  size_t preorder(size_t id) const;

  // Folding: `member` stands in for nothing while `rep` runs for both. Before the run,
  // subtract rep's counters from member's whole subtree; after it, add them back (the net is
  // what rep's subtree did meanwhile) and copy the state below rep to below member.
  void subtract_subtree_stats(size_t rep, size_t member);
  void add_subtree_stats(size_t rep, size_t member);
  void copy_state_below(size_t rep, size_t member);
  // Recomputes node `id`'s below_digest from its children.
  void update_below_digest(size_t id);

  // The per-node reports, the root first, then level by level; the tree is spent.
  std::vector<NodeReport> take_reports() { return std::move(reports_); }

 private:
  struct State {
    TensorPermutationTable tpt;
    uint64_t below_digest = 0;
  };
  // Tier t holds the nodes of level t - 1 (tier 0 is the root).
  size_t tier(size_t id) const { return static_cast<size_t>(reports_[id].level + 1); }
  // Applies f(to, from) to every pair of nodes at the same place in the subtrees of `rep` and
  // `member` (two nodes of one level), from `first_tier` levels below them down.
  template <typename F>
  void for_subtree_pairs(size_t rep, size_t member, size_t first_tier, F&& f);

  std::vector<NodeReport> reports_;
  std::vector<State> state_;
  std::vector<int> fanout_;      // [tier]: children of a node of that tier (0 at the leaves)
  std::vector<size_t> begin_;    // [tier]: its first id; [tiers]: size()
  std::vector<size_t> subtree_;  // [tier]: nodes in a subtree rooted at that tier
};

}  // namespace fracsim::sim
