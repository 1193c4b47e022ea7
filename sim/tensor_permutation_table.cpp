#include "sim/tensor_permutation_table.h"

#include <algorithm>
#include <numeric>

#include "isa/decompose/localize.h"
#include "isa/error.h"

namespace fracsim::sim {
namespace {

struct Gap {
  uint64_t begin, end;
};

// Whether [b1, e1) and [b2, e2) share a byte.
bool meets(uint64_t b1, uint64_t e1, uint64_t b2, uint64_t e2) { return b1 < e2 && b2 < e1; }

// FNV-1a over 64-bit words, then a xorshift: each step is a bijection of h, so sequences that
// differ in one word never collide.
struct Digest {
  uint64_t h = 1469598103934665603ULL;
  void add(uint64_t v) {
    h = (h ^ v) * 1099511628211ULL;
    h ^= h >> 29;
  }
};

}  // namespace

TensorPermutationTable::Entry TensorPermutationTable::make_entry(const isa::TensorRef& view,
                                                                 uint64_t local, uint64_t bytes,
                                                                 uint64_t last_use, bool whole) {
  const auto span = view.byte_span();
  Digest d;
  d.add(view.address);
  d.add(static_cast<uint64_t>(view.dtype));
  for (int64_t s : view.shape) d.add(static_cast<uint64_t>(s));
  for (int64_t s : view.strides) d.add(static_cast<uint64_t>(s));
  d.add(local);
  d.add(bytes);
  d.add(whole ? 1 : 0);
  return Entry{span.first, span.second, local, bytes, last_use, whole, d.h};
}

void TensorPermutationTable::Entries::insert(Entry e, const isa::TensorRef& view) {
  insert(e, std::make_shared<const isa::TensorRef>(view));
}

void TensorPermutationTable::Entries::insert(Entry e, std::shared_ptr<const isa::TensorRef> view) {
  const auto at = std::upper_bound(list.begin(), list.end(), e.local,
                                   [](uint64_t local, const Entry& x) { return local < x.local; });
  views.insert(views.begin() + (at - list.begin()), std::move(view));
  list.insert(at, e);
  const std::pair<uint64_t, uint64_t> span{e.span_begin, e.span_end};
  const size_t k =
      static_cast<size_t>(std::upper_bound(spans.begin(), spans.end(), span) - spans.begin());
  spans.insert(spans.begin() + static_cast<std::ptrdiff_t>(k), span);
  reach_from(k);
}

void TensorPermutationTable::Entries::reach_from(size_t k) {
  reach.resize(spans.size());
  for (size_t i = k; i < spans.size(); ++i)
    reach[i] = i == 0 ? spans[i].second : std::max(reach[i - 1], spans[i].second);
}

bool TensorPermutationTable::Entries::meets(uint64_t begin, uint64_t end) const {
  // The spans that begin before `end` come first; one of them meets the range if it reaches
  // past `begin`.
  const auto k = std::lower_bound(spans.begin(), spans.end(), end,
                                  [](const std::pair<uint64_t, uint64_t>& s, uint64_t at) {
                                    return s.first < at;
                                  }) -
                 spans.begin();
  return k > 0 && reach[static_cast<size_t>(k - 1)] > begin;
}

size_t TensorPermutationTable::Entries::at(uint64_t local, uint64_t bytes) const {
  auto it = std::lower_bound(list.begin(), list.end(), local,
                             [](const Entry& x, uint64_t l) { return x.local < l; });
  while (it != list.end() && it->local == local && it->bytes != bytes) ++it;
  FRACSIM_ASSERT(it != list.end() && it->local == local,
                 "permutation table: no entry at {} of {} bytes", local, bytes);
  return static_cast<size_t>(it - list.begin());
}

template <typename Stale>
size_t TensorPermutationTable::Entries::erase_if(Stale stale) {
  size_t kept = 0;
  std::vector<std::pair<uint64_t, uint64_t>> gone;
  for (size_t i = 0; i < list.size(); ++i) {
    if (stale(i)) {
      gone.emplace_back(list[i].span_begin, list[i].span_end);
      continue;
    }
    if (kept != i) {
      list[kept] = list[i];
      views[kept] = std::move(views[i]);
    }
    ++kept;
  }
  const size_t dropped = list.size() - kept;
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(kept), list.end());
  views.erase(views.begin() + static_cast<std::ptrdiff_t>(kept), views.end());
  if (dropped == 0) return 0;
  // The dropped spans out of the sorted ones (each once: spans may repeat).
  std::sort(gone.begin(), gone.end());
  size_t g = 0, out = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (g < gone.size() && spans[i] == gone[g]) {
      ++g;
      continue;
    }
    spans[out++] = spans[i];
  }
  spans.resize(out);
  reach_from(0);
  return dropped;
}

void TensorPermutationTable::Entries::erase_at(size_t i) {
  erase_if([i](size_t e) { return e == i; });
}

TensorPermutationTable::Entries& TensorPermutationTable::entries() {
  digest_known_ = false;
  if (!entries_)
    entries_ = std::make_shared<Entries>();
  else if (entries_.use_count() > 1)
    entries_ = std::make_shared<Entries>(*entries_);
  return *entries_;
}

bool TensorPermutationTable::try_place(const std::vector<uint64_t>& miss_bytes,
                                       uint64_t cyclic_bytes,
                                       const std::vector<std::pair<uint64_t, uint64_t>>& busy,
                                       std::optional<uint64_t> ring,
                                       std::vector<uint64_t>& miss_local,
                                       uint64_t& cyclic_base) const {
  const uint64_t usable = usable_bytes();
  std::vector<Gap> gaps;
  uint64_t at = 0;
  if (busy.empty()) {
    if (entries_)
      for (const Entry& e : entries_->list) {  // in local order
        if (e.local > at) gaps.push_back({at, e.local});
        at = std::max(at, e.local + e.bytes);
      }
  } else {  // an overlapped instruction's tiles are taken too
    std::vector<std::pair<uint64_t, uint64_t>> taken = busy;  // [begin, end)
    std::sort(taken.begin(), taken.end());
    std::vector<std::pair<uint64_t, uint64_t>> held;  // both, merged (the entries are in order)
    held.reserve(taken.size() + size());
    if (entries_) {
      auto t = taken.begin();
      for (const Entry& e : entries_->list) {
        const std::pair<uint64_t, uint64_t> range{e.local, e.local + e.bytes};
        for (; t != taken.end() && *t < range; ++t) held.push_back(*t);
        held.push_back(range);
      }
      held.insert(held.end(), t, taken.end());
    } else {
      held = std::move(taken);
    }
    for (const auto& [begin, end] : held) {
      if (begin > at) gaps.push_back({at, begin});
      at = std::max(at, end);
    }
  }
  if (at < usable) gaps.push_back({at, usable});

  // Static tiles go as close to either end as they fit, keeping the middle free.
  miss_local.assign(miss_bytes.size(), 0);
  for (size_t m = 0; m < miss_bytes.size(); ++m) {
    const uint64_t b = miss_bytes[m];
    int best = -1;
    uint64_t best_score = 0;
    for (size_t g = 0; g < gaps.size(); ++g) {
      if (gaps[g].end - gaps[g].begin < b) continue;
      const uint64_t score = std::min(gaps[g].begin, usable - gaps[g].end);
      if (best < 0 || score < best_score) {
        best = static_cast<int>(g);
        best_score = score;
      }
    }
    if (best < 0) return false;
    Gap& g = gaps[best];
    if (g.begin <= usable - g.end) {
      miss_local[m] = g.begin;
      g.begin += b;
    } else {
      miss_local[m] = g.end - b;
      g.end -= b;
    }
  }
  if (ring) {
    cyclic_base = *ring;  // one of the busy ranges: the static tiles kept clear of it
    return true;
  }
  // The cyclic segment takes the largest gap left (the lowest of equals).
  int best = -1;
  for (size_t g = 0; g < gaps.size(); ++g)
    if (best < 0 || gaps[g].end - gaps[g].begin > gaps[best].end - gaps[best].begin)
      best = static_cast<int>(g);
  if (cyclic_bytes == 0) {
    cyclic_base = best < 0 ? 0 : gaps[best].begin;
    return true;
  }
  if (best < 0 || gaps[best].end - gaps[best].begin < cyclic_bytes) return false;
  cyclic_base = gaps[best].begin;
  return true;
}

SegmentLayout TensorPermutationTable::place(const std::vector<StaticRequest>& requests,
                                            uint64_t cyclic_bytes) {
  if (auto layout = place_among(requests, cyclic_bytes, {}, std::nullopt, true)) return *layout;
  uint64_t total = cyclic_bytes;
  for (size_t r = 0; r < requests.size(); ++r) {
    size_t u = 0;
    while (requests[u].view != requests[r].view) ++u;
    if (u == r) total += requests[r].bytes;  // a view named twice shares one tile
  }
  throw InternalError(
      fmt::format("static segment: {} bytes of static tiles and cyclic "
                  "segment do not fit a local memory of {} bytes",
                  total, capacity_));
}

std::optional<SegmentLayout> TensorPermutationTable::place_beside(
    const std::vector<StaticRequest>& requests, uint64_t cyclic_bytes,
    const std::vector<std::pair<uint64_t, uint64_t>>& busy, std::optional<uint64_t> ring) {
  // Without evicting, nothing changes unless it fits; only an attempt that evicts needs its
  // changes undone when it fails.
  if (auto layout = place_among(requests, cyclic_bytes, busy, ring, false)) return layout;
  begin_trial();
  auto layout = place_among(requests, cyclic_bytes, busy, ring, true);
  end_trial(layout.has_value());
  return layout;
}

void TensorPermutationTable::begin_trial() {
  trials_.push_back({undo_.size(), clock_, digest_, digest_known_});
}

void TensorPermutationTable::end_trial(bool keep) {
  FRACSIM_ASSERT(!trials_.empty(), "permutation table: a trial ended that did not begin");
  const Trial t = trials_.back();
  trials_.pop_back();
  if (keep) {
    if (trials_.empty()) undo_.clear();
    return;
  }
  if (undo_.size() > t.undo) {
    Entries& all = entries();
    for (size_t k = undo_.size(); k-- > t.undo;) {
      Undo& u = undo_[k];
      switch (u.kind) {
        case Undo::Kind::inserted:
          all.erase_at(all.at(u.entry.local, u.entry.bytes));
          break;
        case Undo::Kind::erased:
          all.insert(u.entry, std::move(u.view));
          break;
        case Undo::Kind::used:
          all.list[all.at(u.entry.local, u.entry.bytes)].last_use = u.entry.last_use;
          break;
      }
    }
  }
  undo_.resize(t.undo);
  clock_ = t.clock;
  digest_ = t.digest;
  digest_known_ = t.digest_known;
}

std::optional<SegmentLayout> TensorPermutationTable::place_among(
    const std::vector<StaticRequest>& requests, uint64_t cyclic_bytes,
    const std::vector<std::pair<uint64_t, uint64_t>>& busy, std::optional<uint64_t> ring,
    bool evict) {
  // A placement that only hits changes the entries' uses, not their views or places: the
  // digest, derived from those alone, stays.
  const uint64_t digest = digest_;
  const bool digest_known = digest_known_;
  auto unchanged = [&] {
    digest_ = digest;
    digest_known_ = digest_known;
  };
  bool evicted = false;
  Entries& all = entries();              // unshared from here on
  std::vector<Entry>& table = all.list;  // its uses change here, its entries through `all`
  // Requests naming the same view share one tile, led by the first of them that loads it.
  std::vector<size_t> uniq_of(requests.size());
  std::vector<size_t> uniq;  // the leading request of each distinct view
  for (size_t r = 0; r < requests.size(); ++r) {
    size_t u = 0;
    while (u < uniq.size() && requests[uniq[u]].view != requests[r].view) ++u;
    if (u == uniq.size())
      uniq.push_back(r);
    else if (requests[uniq[u]].use == StaticUse::room && requests[r].use == StaticUse::load)
      uniq[u] = r;
    uniq_of[r] = u;
  }

  // An entry of a request's view has its span: compared first.
  std::vector<std::pair<uint64_t, uint64_t>> uniq_span(uniq.size());
  for (size_t u = 0; u < uniq.size(); ++u) uniq_span[u] = requests[uniq[u]].view.byte_span();
  auto holds = [&](size_t e, size_t u) {
    return table[e].span_begin == uniq_span[u].first && table[e].span_end == uniq_span[u].second &&
           *all.views[e] == requests[uniq[u]].view;
  };

  while (true) {
    std::vector<int> hit_entry(uniq.size(), -1);
    std::vector<bool> pinned(table.size(), false);
    std::vector<size_t> misses;
    for (size_t u = 0; u < uniq.size(); ++u) {
      const StaticUse use = requests[uniq[u]].use;
      if (use != StaticUse::output)
        for (size_t e = 0; e < table.size(); ++e)
          if (holds(e, u)) {
            hit_entry[u] = static_cast<int>(e);
            pinned[e] = true;
          }
      if (hit_entry[u] < 0 && use != StaticUse::resident) misses.push_back(u);
    }
    // Larger tiles first (then request order), so they take the ends.
    std::stable_sort(misses.begin(), misses.end(), [&](size_t a, size_t b) {
      return requests[uniq[a]].bytes > requests[uniq[b]].bytes;
    });
    std::vector<uint64_t> miss_bytes, miss_local;
    miss_bytes.reserve(misses.size());
    for (size_t u : misses) miss_bytes.push_back(requests[uniq[u]].bytes);
    uint64_t cyclic_base = 0;
    if (try_place(miss_bytes, cyclic_bytes, busy, ring, miss_local, cyclic_base)) {
      std::vector<uint64_t> local(uniq.size());
      std::vector<bool> hit(uniq.size(), false);
      for (size_t u = 0; u < uniq.size(); ++u)
        if (hit_entry[u] >= 0) {
          local[u] = table[hit_entry[u]].local;
          hit[u] = true;
        }
      table.reserve(table.size() + misses.size());
      bool inserted = false;
      for (size_t m = 0; m < misses.size(); ++m) {
        const StaticRequest& rq = requests[uniq[misses[m]]];
        if (rq.use == StaticUse::load) {
          const Entry e = make_entry(rq.view, miss_local[m], rq.bytes, 0);
          all.insert(e, rq.view);
          record(Undo::Kind::inserted, e);
          inserted = true;
        }
        local[misses[m]] = miss_local[m];
      }
      // Uses in request order: the later a request, the more recently used.
      for (size_t u = 0; u < uniq.size(); ++u)
        if (requests[uniq[u]].use != StaticUse::output)
          for (size_t e = 0; e < table.size(); ++e)
            if (holds(e, u)) {
              record(Undo::Kind::used, table[e]);
              table[e].last_use = ++clock_;
            }
      if (!inserted && !evicted) unchanged();
      SegmentLayout out;
      out.cyclic_base = cyclic_base;
      out.local.reserve(requests.size());
      out.hit.reserve(requests.size());
      out.room.reserve(requests.size());
      for (size_t r = 0; r < requests.size(); ++r) {
        out.local.push_back(local[uniq_of[r]]);
        out.room.push_back(requests[r].use == StaticUse::room);
        // A second request for a view loaded now is not loaded twice: it counts as a hit.
        out.hit.push_back(hit[uniq_of[r]] || uniq[uniq_of[r]] != r);
      }
      return out;
    }
    if (!evict) {
      unchanged();
      return std::nullopt;
    }
    // Evict the least recently used entry, unpinned ones first.
    int victim = -1;
    for (int pass = 0; pass < 2 && victim < 0; ++pass)
      for (size_t e = 0; e < table.size(); ++e) {
        if (pass == 0 && pinned[e]) continue;
        if (victim < 0 || table[e].last_use < table[victim].last_use) victim = static_cast<int>(e);
      }
    if (victim < 0) return std::nullopt;
    record(Undo::Kind::erased, table[victim], all.views[victim]);
    all.erase_at(static_cast<size_t>(victim));
    evicted = true;
  }
}

std::optional<ResidentView> TensorPermutationTable::containing(const isa::TensorRef& view) const {
  if (!entries_) return std::nullopt;
  for (size_t i = 0; i < entries_->list.size(); ++i) {
    const Entry& e = entries_->list[i];
    if (e.whole && isa::view_within(*entries_->views[i], view, e.local))
      return ResidentView{*entries_->views[i], e.local, e.bytes};
  }
  return std::nullopt;
}

std::optional<uint64_t> TensorPermutationTable::lookup(const isa::TensorRef& view) const {
  if (!entries_) return std::nullopt;
  for (size_t i = 0; i < entries_->list.size(); ++i)
    if (*entries_->views[i] == view) return entries_->list[i].local;
  return std::nullopt;
}

uint64_t TensorPermutationTable::usable_bytes() const {
  return capacity_ / isa::kTileAlign * isa::kTileAlign;
}

bool TensorPermutationTable::is_free(uint64_t begin, uint64_t end) const {
  if (end > usable_bytes()) return false;
  if (entries_)
    for (const Entry& e : entries_->list)
      if (meets(e.local, e.local + e.bytes, begin, end)) return false;
  return true;
}

void TensorPermutationTable::keep(const isa::TensorRef& view, uint64_t local, uint64_t bytes,
                                  bool whole) {
  FRACSIM_ASSERT(trials_.empty(), "permutation table: an output kept during a trial");
  Entry kept = make_entry(view, local, bytes, ++clock_, whole);
  Entries& all = entries();
  // The entries whose local bytes it takes: a run of the list, which is in local order.
  const auto by_end = [](const Entry& e, uint64_t at) { return e.local + e.bytes <= at; };
  const auto first = std::lower_bound(all.list.begin(), all.list.end(), local, by_end);
  const auto last = std::lower_bound(first, all.list.end(), local + bytes,
                                     [](const Entry& e, uint64_t at) { return e.local < at; });
  const size_t a = static_cast<size_t>(first - all.list.begin()),
               b = static_cast<size_t>(last - all.list.begin());
  all.erase_if([&](size_t i) {
    return (i >= a && i < b) ||
           meets(all.list[i].span_begin, all.list[i].span_end, kept.span_begin, kept.span_end);
  });
  all.insert(kept, view);
}

int TensorPermutationTable::invalidate(uint64_t begin, uint64_t end) {
  FRACSIM_ASSERT(trials_.empty(), "permutation table: an entry invalidated during a trial");
  if (size() == 0 || !entries_->meets(begin, end)) return 0;
  Entries& all = entries();
  return static_cast<int>(all.erase_if(
      [&](size_t i) { return meets(all.list[i].span_begin, all.list[i].span_end, begin, end); }));
}

uint64_t TensorPermutationTable::digest() const {
  if (digest_known_) return digest_;
  Digest d;
  d.add(size());
  if (entries_)
    for (const Entry& e : entries_->list) d.add(e.digest);  // in local order
  digest_known_ = true;
  return digest_ = d.h;
}

bool TensorPermutationTable::same_contents(const TensorPermutationTable& o) const {
  if (entries_ == o.entries_ || size() + o.size() == 0) return true;  // shared by a copy
  if (size() != o.size()) return false;
  // Both in local order (places never overlap): the same entry at each place, then the same
  // order of use between every two of them.
  const std::vector<Entry>& a = entries_->list;
  const std::vector<Entry>& b = o.entries_->list;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].local != b[i].local || a[i].bytes != b[i].bytes ||
        *entries_->views[i] != *o.entries_->views[i] || a[i].whole != b[i].whole)
      return false;
  // Taken in a's order of use, b's uses rise where a's do and tie where a's tie: every two
  // entries compare alike (the least recently used, the victim, is the same entry).
  std::vector<uint32_t> order(a.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return a[x].last_use < a[y].last_use || (a[x].last_use == a[y].last_use && x < y);
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const uint64_t a0 = a[order[k - 1]].last_use, a1 = a[order[k]].last_use;
    const uint64_t b0 = b[order[k - 1]].last_use, b1 = b[order[k]].last_use;
    if ((a0 < a1) != (b0 < b1) || (a0 == a1) != (b0 == b1)) return false;
  }
  return true;
}

}  // namespace fracsim::sim
