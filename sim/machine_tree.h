// Every node of the machine as the report sees it, whether or not a SystemC Node simulates it:
// its counters and tensor permutation table (its path is computed from its number). With folding,
// one simulated Node plays one tree node at a time and stands for the congruent others; their
// counters and state are copied from it.
//
// Nodes are numbered level by level (the root 0, then the first level's nodes in order, ...):
// the report's order. The descendants of a node at any level below are a contiguous range of
// that level, of the same width for every node of its level (copies between congruent subtrees
// are range moves).
//
// Storage is sparse: only nodes whose parent is concrete (see Folding below) have a slot with
// counters, table and mirror links; the others are read through a mirror and own nothing. A
// folded run touches memory for the nodes it tells apart, not for every node (the MLP at 4096
// leaves: 117 slots for 5461 nodes).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/node_reports.h"
#include "sim/node_stats.h"
#include "sim/tensor_permutation_table.h"

namespace fracsim::sim {

class MachineTree {
 public:
  // `digest_mask` keeps these bits of every below_digest: all of them but in tests, which clear
  // them to make every digest collide (same_below() then decides alone).
  explicit MachineTree(const MachineSpec& spec, uint64_t digest_mask = ~uint64_t{0});

  size_t size() const { return begin_.back(); }
  std::string path(size_t id) const;  // "root.cluster0.core1", built when asked (messages)
  int level(size_t id) const { return static_cast<int>(tier(id)) - 1; }  // -1 for the root
  // Counters of a concrete node (one a Node is playing).
  NodeStats& stats(size_t id) { return slots_[slot_[id]].stats; }
  // Keyed by views in the parent's memory (unused at the root). A node whose parent is
  // concrete.
  TensorPermutationTable& tpt(size_t id) { return slots_[slot_[id]].tpt; }
  // Digest of the permutation tables of every node below (as of its last instruction): two
  // nodes with equal digests have children that behave alike. A node whose parent is concrete.
  uint64_t below_digest(size_t id) const { return slots_[slot_[source(id)]].below_digest; }
  // Whether the permutation tables of every node below `a` and below `b` (two nodes of one
  // level whose parents are concrete) are the same, node by node: what equal below_digests
  // suggest, compared exactly.
  bool same_below(size_t a, size_t b) const;

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

  // The per-node reports, the root first, then level by level: one entry per concrete node,
  // which the nodes reading through it share.
  NodeReports reports() const;

 private:
  static constexpr size_t kNone = ~size_t{0};
  // What a node with a slot owns.
  struct Slot {
    NodeStats stats;  // meaningful while the node is concrete
    TensorPermutationTable tpt;
    uint64_t below_digest = 0;
    // The node whose data this one reads (kNone: its own). Only nodes whose parent is concrete
    // mirror, and only concrete nodes are mirrored.
    size_t mirror = kNone;
    std::vector<size_t> mirrored_by;  // the nodes mirroring this one
  };
  // Tier t holds the nodes of level t - 1 (tier 0 is the root).
  size_t tier(size_t id) const {
    size_t t = 0;
    while (id >= begin_[t + 1]) ++t;
    return t;
  }
  size_t parent(size_t id) const {
    const size_t t = tier(id);
    return begin_[t - 1] + (id - begin_[t]) / static_cast<size_t>(fanout_[t - 1]);
  }
  size_t mirror(size_t id) const { return slots_[slot_[id]].mirror; }
  // The concrete node whose data `id` (a node whose parent is concrete) reads.
  size_t source(size_t id) const { return mirror(id) == kNone ? id : mirror(id); }
  // The slot of `id`, made (with an empty table of its level's capacity) if it has none.
  Slot& make_slot(size_t id);
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

  // Makes `id` concrete: copies what it mirrors and lets its children mirror the mirrored
  // node's children (or what those mirror). Its parent must be concrete.
  void materialize(size_t id);
  // Makes every node that mirrors `id` concrete, except those `keep` accepts.
  template <typename Keep>
  void detach_mirrors_of(size_t id, Keep&& keep);
  void set_mirror(size_t id, size_t target);
  void clear_mirror(size_t id);

  uint64_t digest_mask_;
  std::vector<uint32_t> slot_;  // [id]: its slot in slots_, or kNoSlot
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  std::deque<Slot> slots_;          // a deque: references stay valid while slots are added
  std::vector<uint64_t> capacity_;  // [tier]: a node's memory capacity (its table's)
  std::vector<int> fanout_;         // [tier]: children of a node of that tier (0 at the leaves)
  std::vector<size_t> begin_;       // [tier]: its first id; [tiers]: size()
  std::vector<size_t> subtree_;     // [tier]: nodes in a subtree rooted at that tier
  std::vector<std::string> names_;  // [tier]: the level's name ("root" at tier 0)
};

}  // namespace fracsim::sim
