// The per-node counters of a run. With folding most nodes did exactly what a simulated node
// did, so nodes share entries: a table of entries and, per node, the entry it reads (4 bytes a
// node rather than a full report: 5461 nodes at 4096 leaves, a handful of entries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include "sim/node_stats.h"

namespace fracsim::sim {

struct NodeReport {
  int level = -1;  // -1 for the root
  NodeStats stats;
};

class NodeReports {
 public:
  NodeReports() = default;
  // One entry per node.
  NodeReports(std::initializer_list<NodeReport> nodes) : entries_(nodes) {
    for (uint32_t i = 0; i < entries_.size(); ++i) entry_of_.push_back(i);
  }
  // entry_of[id]: the entry in `entries` node `id` reads.
  NodeReports(std::vector<NodeReport> entries, std::vector<uint32_t> entry_of)
      : entries_(std::move(entries)), entry_of_(std::move(entry_of)) {}

  // Nodes: the root first, then level by level.
  size_t size() const { return entry_of_.size(); }
  const NodeReport& operator[](size_t id) const { return entries_[entry_of_[id]]; }
  const NodeReport& at(size_t id) const { return entries_.at(entry_of_.at(id)); }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = NodeReport;
    using difference_type = std::ptrdiff_t;
    using pointer = const NodeReport*;
    using reference = const NodeReport&;
    const_iterator() = default;
    const_iterator(const NodeReports& r, size_t id) : r_(&r), id_(id) {}
    reference operator*() const { return (*r_)[id_]; }
    pointer operator->() const { return &(*r_)[id_]; }
    const_iterator& operator++() {
      ++id_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++id_;
      return old;
    }
    bool operator==(const const_iterator& o) const { return id_ == o.id_; }
    bool operator!=(const const_iterator& o) const { return id_ != o.id_; }

   private:
    const NodeReports* r_ = nullptr;
    size_t id_ = 0;
  };
  const_iterator begin() const { return {*this, 0}; }
  const_iterator end() const { return {*this, size()}; }

 private:
  std::vector<NodeReport> entries_;
  std::vector<uint32_t> entry_of_;
};

}  // namespace fracsim::sim
