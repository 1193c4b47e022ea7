// Every node of the machine as the report sees it, whether or not a SystemC Node simulates it:
// its counters and tensor permutation table (its path is computed from its number). With folding, one simulated Node plays one
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
  std::string path(size_t id) const;  // "root.cluster0.core1", built when asked (messages)
  int level(size_t id) const { return reports_[id].level; }               // -1 for the root
  // Counters of a concrete node (one a Node is playing, or any node after take_reports).
  NodeStats& stats(size_t id) { return reports_[id].stats; }
  // Keyed by views in the parent's memory (unused at the root).
  TensorPermutationTable& tpt(size_t id) { return state_[id].tpt; }
  // Digest of the permutation tables of every node below (as of its last instruction): two
  // nodes with equal digests have children that behave alike.
  uint64_t below_digest(size_t id) const {
    return state_[mirror_[id] == kNone ? id : mirror_[id]].below_digest;
  }

  int fanout(size_t id) const { return fanout_[tier(id)]; }
  size_t child(size_t id, int i) const {
    const size_t t = tier(id);
    return begin_[t + 1] + (id - begin_[t]) * fanout_[t] + static_cast<size_t>(i);
  }
  // The node's number in depth-first pre-order (a node, then each child's subtree): trace
  // tracks keep that numbering.
  size_t preorder(size_t id) const;

  // Folding. A node may *mirror* another node of its level: its counters, its below_digest and
  // everything below it (counters, tables) are then those of the mirrored node, read through
  // it, and nothing is copied until the two diverge. Congruent children that received the same
  // instructions so far mirror one simulated sibling, so a fold costs a few pointer moves
  // rather than a walk over the subtrees (4096 leaves: 5461 nodes, most never simulated). A
  // node's own permutation table is never mirrored (its keys are its own parent's addresses).
  //
  // Before the children of one node run a round of classes (`reps[k]` simulated for the
  // `members[k]`, reps[k] among them), fold() makes each rep concrete, lets the members that
  // mirror the same history as their rep follow it, and detaches every other node that mirrors
  // a node about to change. Members with a history of their own are subtracted now and, after
  // the round, unfold() adds what their rep's subtree did and copies the state below it.
  struct FoldRound {
    std::vector<size_t> reps;
    std::vector<std::vector<size_t>> members;
    std::vector<std::pair<size_t, size_t>> own_history;  // (rep, member) pairs done by copying
  };
  void fold(FoldRound& round);
  void unfold(const FoldRound& round);
  // Recomputes node `id`'s below_digest from its children (a concrete node).
  void update_below_digest(size_t id);

  // The per-node reports, the root first, then level by level; the tree is spent.
  std::vector<NodeReport> take_reports();

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
  // Applies f(id) to `id` and every node below it, level by level.
  template <typename F>
  void for_subtree(size_t id, F&& f);
  void subtract_subtree_stats(size_t rep, size_t member);
  void add_subtree_stats(size_t rep, size_t member);
  void copy_state_below(size_t rep, size_t member);

  static constexpr size_t kNone = ~size_t{0};
  // Makes `id` concrete: copies what it mirrors and lets its children mirror the mirrored
  // node's children (or what those mirror). Its parent must be concrete.
  void materialize(size_t id);
  // Makes every node that mirrors `id` concrete, except those `keep` accepts.
  template <typename Keep>
  void detach_mirrors_of(size_t id, Keep&& keep);
  void set_mirror(size_t id, size_t target);
  void clear_mirror(size_t id);

  std::vector<NodeReport> reports_;
  std::vector<State> state_;
  // mirror_[id]: the node whose data `id` reads (kNone: its own). Only nodes whose parent is
  // concrete mirror, and only concrete nodes are mirrored.
  std::vector<size_t> mirror_;
  std::vector<std::vector<size_t>> mirrored_by_;  // [id]: the nodes mirroring id
  std::vector<int> fanout_;      // [tier]: children of a node of that tier (0 at the leaves)
  std::vector<size_t> begin_;    // [tier]: its first id; [tiers]: size()
  std::vector<size_t> subtree_;  // [tier]: nodes in a subtree rooted at that tier
  std::vector<std::string> names_;  // [tier]: the level's name ("root" at tier 0)
};

}  // namespace fracsim::sim
