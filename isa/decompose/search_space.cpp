#include "isa/decompose/search_space.h"

#include <functional>
#include <set>

#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"

namespace fracsim::isa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ...
int64_t next_parts(int64_t p) {
  if (p < 4) return p + 1;
  const int64_t pow2 = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(p)));
  return p == pow2 ? p + p / 2 : 2 * pow2;
}

}  // namespace

bool splittable(const DimDef& d) {
  return d.kind == DimKind::parallel || d.kind == DimKind::reduce;
}

bool reduce_order_kept(const OpDef& op, const std::vector<int64_t>& tile, size_t d) {
  if (op.dims[d].kind != DimKind::reduce) return true;
  for (size_t e = 0; e < d; ++e)
    if (op.dims[e].kind == DimKind::reduce && tile[e] > 1) return false;
  return true;
}

bool tiling_legal(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  for (size_t d = 0; d < ext.size(); ++d)
    if (tile[d] < ext[d] && !reduce_order_kept(op, tile, d)) return false;
  return true;
}

std::vector<int64_t> candidate_parts(int64_t extent, bool leaf) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= extent; p = leaf ? (p < 8 ? p + 1 : p + std::max<int64_t>(1, p / 4))
                                            : (p < 4        ? p + 1
                                               : p % 3 == 0 ? p / 3 * 4
                                                            : p / 2 * 3))
    out.push_back(p);
  if (out.back() != extent) out.push_back(extent);
  return out;
}

std::vector<std::vector<int64_t>> tile_values(const OpDef& op, const Instruction& instr, bool leaf,
                                              const std::vector<std::vector<int64_t>>& starts) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  std::vector<std::vector<int64_t>> values(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) {
    std::set<int64_t> v;
    for (const std::vector<int64_t>& s : starts) v.insert(s[d]);
    if (starts.empty()) v.insert(ext[d]);
    // A kernel's taps keep the tile their start gives (split only when nothing else fits).
    if (splittable(op.dims[d]) && !op.is_taps(d) && ext[d] > 1)
      for (int64_t p : candidate_parts(ext[d], leaf)) v.insert(ceil_div(ext[d], p));
    values[d].assign(v.begin(), v.end());
  }
  return values;
}

std::vector<std::vector<int64_t>> partition_candidates(const OpDef& op, const Instruction& piece,
                                                       int fanout, bool split_reduce) {
  const std::vector<int64_t> ext = dim_extents(op, piece);
  std::vector<std::vector<int64_t>> out{std::vector<int64_t>(ext.size(), 1)};
  std::vector<int> dims;
  bool any_parallel = false;
  for (size_t d = 0; d < ext.size(); ++d)
    if (ext[d] > 1 && op.dims[d].kind == DimKind::parallel) {
      dims.push_back(static_cast<int>(d));
      any_parallel = true;
    } else if (split_reduce && ext[d] > 1 && reduce_splits_across(op, piece, d)) {
      dims.push_back(static_cast<int>(d));
    }
  // Without a parallel dim to split, parallel() splits a reduce dim by its own rule.
  if (!any_parallel) return out;
  // Splits that leave more than half the children idle are not tried when a split can use
  // more.
  int64_t most = 1;
  for (int d : dims)
    if (op.dims[d].kind == DimKind::parallel) most *= std::min<int64_t>(ext[d], fanout);
  const int64_t least = std::min<int64_t>(most, fanout) / 2 + 1;
  std::vector<int64_t> parts(ext.size(), 1);
  // At most one reduce dim is split across the children.
  std::function<void(size_t, int64_t, bool)> visit = [&](size_t i, int64_t used, bool reduced) {
    if (i == dims.size()) {
      if (used >= least && used > 1) out.push_back(parts);
      return;
    }
    const int d = dims[i];
    const bool reduce = op.dims[d].kind == DimKind::reduce;
    int64_t last_len = -1;
    for (int64_t p = 1; p <= ext[d] && used * p <= fanout && (p == 1 || !reduce || !reduced);
         p = next_parts(p)) {
      const int64_t len = ceil_div(ext[d], p);
      if (len == last_len) continue;
      last_len = len;
      parts[d] = p;
      visit(i + 1, used * p, reduced || (reduce && p > 1));
    }
    parts[d] = 1;
  };
  visit(0, 1, false);
  return out;
}

}  // namespace fracsim::isa
