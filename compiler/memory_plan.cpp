#include "compiler/memory_plan.h"

#include <algorithm>
#include <climits>
#include <numeric>

#include "isa/error.h"

namespace fracsim::compiler {

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

MemoryPlan MemoryPlan::first_fit(const std::vector<TensorLifetime>& tensors, uint64_t alignment) {
  FRACSIM_ASSERT(alignment > 0, "alignment must be positive");
  int lo = INT_MAX, hi = INT_MIN;
  for (const TensorLifetime& t : tensors) {
    FRACSIM_ASSERT(t.first <= t.last, "tensor {} lives from {} to {}", t.name, t.first, t.last);
    lo = std::min(lo, t.first);
    hi = std::max(hi, t.last);
  }
  auto whole = [&](const TensorLifetime& t) { return t.first == lo && t.last == hi; };
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TensorLifetime &x = tensors[a], &y = tensors[b];
    if (whole(x) != whole(y)) return whole(x);
    return !whole(x) && x.first < y.first;
  });

  MemoryPlan plan;
  plan.tensors_.resize(tensors.size());
  std::vector<const TensorPlacement*> placed;
  for (size_t i : order) {
    const TensorLifetime& t = tensors[i];
    TensorPlacement p{t.name, 0, t.bytes, t.first, t.last};
    // The placed tensors live with this one, by address; walk the gaps between them.
    std::vector<const TensorPlacement*> busy;
    for (const TensorPlacement* q : placed)
      if (q->live_with(p) && q->bytes > 0) busy.push_back(q);
    std::sort(busy.begin(), busy.end(), [](const TensorPlacement* a, const TensorPlacement* b) {
      return a->address < b->address;
    });
    uint64_t candidate = 0;
    for (const TensorPlacement* q : busy) {
      if (candidate + p.bytes <= q->address) break;
      candidate = std::max(candidate, align_up(q->end(), alignment));
    }
    p.address = candidate;
    plan.tensors_[i] = p;
    placed.push_back(&plan.tensors_[i]);
    plan.footprint_ = std::max(plan.footprint_, align_up(p.end(), alignment));
  }
  return plan;
}

const TensorPlacement& MemoryPlan::at(const std::string& name) const {
  for (const TensorPlacement& t : tensors_)
    if (t.name == name) return t;
  FRACSIM_ASSERT(false, "no tensor {} in the memory plan", name);
  return tensors_.front();
}

}  // namespace fracsim::compiler
