#include "sim/shared_bandwidth.h"

#include <algorithm>

#include "isa/error.h"

namespace fracsim::sim {

int SharedBandwidth::start(uint64_t now_ps, uint64_t bytes, uint64_t cap, uint64_t copies) {
  FRACSIM_ASSERT(cap > 0 && copies > 0, "transfer with cap {} and {} copies", cap, copies);
  settle(now_ps);
  flows_.push_back(Flow{next_id_, static_cast<U128>(bytes) * 1000000000000ULL, cap, copies, 0});
  share();
  return next_id_++;
}

std::optional<uint64_t> SharedBandwidth::next_end() const {
  std::optional<uint64_t> best;
  for (const Flow& f : flows_) {
    const uint64_t dt =
        f.remaining == 0 ? 0 : static_cast<uint64_t>((f.remaining + f.rate - 1) / f.rate);
    if (!best || last_ps_ + dt < *best) best = last_ps_ + dt;
  }
  return best;
}

std::vector<int> SharedBandwidth::advance(uint64_t now_ps) {
  settle(now_ps);
  std::vector<int> ended;
  for (const Flow& f : flows_)
    if (f.remaining == 0) ended.push_back(f.id);
  if (!ended.empty()) {
    flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                                [](const Flow& f) { return f.remaining == 0; }),
                 flows_.end());
    share();
  }
  return ended;
}

void SharedBandwidth::settle(uint64_t now_ps) {
  FRACSIM_ASSERT(now_ps >= last_ps_, "time went back from {} to {} ps", last_ps_, now_ps);
  const U128 dt = now_ps - last_ps_;
  for (Flow& f : flows_) {
    const U128 moved = static_cast<U128>(f.rate) * dt;
    f.remaining = moved >= f.remaining ? 0 : f.remaining - moved;
  }
  last_ps_ = now_ps;
}

// Water-filling over cap levels: every transfer with the same cap gets the same rate, so k
// transfers of one copy each and one transfer of k copies are shared alike.
void SharedBandwidth::share() {
  std::vector<Flow*> live;
  for (Flow& f : flows_) {
    f.rate = 0;
    if (f.remaining > 0) live.push_back(&f);
  }
  std::sort(live.begin(), live.end(), [](const Flow* a, const Flow* b) {
    return a->cap != b->cap ? a->cap < b->cap : a->id < b->id;
  });
  uint64_t left = bandwidth_, count = 0;
  for (const Flow* f : live) count += f->copies;
  size_t i = 0;
  while (i < live.size()) {
    const uint64_t fair = std::max<uint64_t>(1, left / count);
    if (live[i]->cap > fair) {
      for (; i < live.size(); ++i) live[i]->rate = fair;
      break;
    }
    const uint64_t cap = live[i]->cap;
    for (; i < live.size() && live[i]->cap == cap; ++i) {
      live[i]->rate = cap;
      left -= std::min(left, cap * live[i]->copies);
      count -= live[i]->copies;
    }
  }
}

}  // namespace fracsim::sim
