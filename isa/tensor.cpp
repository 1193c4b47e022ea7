#include "isa/tensor.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"

namespace fracsim::isa {

int64_t num_elements(const Shape& shape) {
  // An empty extent empties the tensor whatever the others (whose product may not fit).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t TensorRef::stored_elements() const {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] != 0) n *= shape[i];
  return n;
}

std::pair<uint64_t, uint64_t> TensorRef::byte_span() const {
  if (elements() == 0) return {address, address};
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t reach = (shape[i] - 1) * strides[i];
    if (reach < 0)
      lo += reach;
    else
      hi += reach;
  }
  uint64_t es = dtype_size(dtype);
  return {address + lo * es, address + (hi + 1) * es};
}

bool views_overlap(const TensorRef& a, const TensorRef& b) {
  const auto sa = a.byte_span(), sb = b.byte_span();
  if (!(sa.first < sb.second && sb.first < sa.second)) return false;
  if (a.dtype != b.dtype || a.strides != b.strides) return true;
  // A byte of a at offset sum(i_d * s_d) meets one of b at delta + sum(j_d * s_d) when delta =
  // sum(k_d * s_d), k_d = i_d - j_d in [1 - m_d, n_d - 1]; the element's bytes are a dim of
  // stride 1. Largest stride first, each k_d that leaves the rest within what the smaller
  // strides reach is tried in turn (where a stride exceeds that reach's width, at most one).
  struct Dim {
    int64_t stride, lo, hi;
  };
  std::vector<Dim> dims;
  const auto es = static_cast<int64_t>(dtype_size(a.dtype));
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (a.strides[d] < 0) return true;
    if (a.strides[d] == 0 || (a.shape[d] == 1 && b.shape[d] == 1)) continue;
    dims.push_back({a.strides[d] * es, 1 - b.shape[d], a.shape[d] - 1});
  }
  dims.push_back({1, 1 - es, es - 1});
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dim& x, const Dim& y) { return x.stride > y.stride; });
  // reach[d]: the least and most that dims d.. sum to.
  std::vector<std::pair<int64_t, int64_t>> reach(dims.size() + 1, {0, 0});
  for (size_t d = dims.size(); d-- > 0;)
    reach[d] = {reach[d + 1].first + dims[d].lo * dims[d].stride,
                reach[d + 1].second + dims[d].hi * dims[d].stride};
  // Past this many partial solutions the views are taken to meet (a hazard waits; it is never
  // missed).
  int64_t budget = int64_t{1} << 16;
  std::function<bool(size_t, int64_t)> solve = [&](size_t d, int64_t delta) {
    if (d == dims.size()) return delta == 0;
    if (delta < reach[d].first || delta > reach[d].second) return false;
    if (--budget < 0) return true;
    const Dim& x = dims[d];
    const int64_t in_lo = reach[d + 1].first, in_hi = reach[d + 1].second;
    // k with delta - k * stride in [in_lo, in_hi]: k in [ceil((delta - in_hi) / s),
    // floor((delta - in_lo) / s)], within [lo, hi].
    auto floor_div = [](int64_t n, int64_t s) { return n >= 0 ? n / s : -((-n + s - 1) / s); };
    const int64_t k_lo = std::max(x.lo, -floor_div(in_hi - delta, x.stride));
    const int64_t k_hi = std::min(x.hi, floor_div(delta - in_lo, x.stride));
    for (int64_t k = k_lo; k <= k_hi; ++k)
      if (solve(d + 1, delta - k * x.stride)) return true;
    return false;
  };
  return solve(0, static_cast<int64_t>(b.address) - static_cast<int64_t>(a.address));
}

TensorRef TensorRef::slice(int dim, int64_t begin, int64_t len) const {
  TensorRef r = *this;
  r.narrow(dim, begin, len);
  return r;
}

void TensorRef::narrow(int dim, int64_t begin, int64_t len) {
  FRACSIM_ASSERT(dim >= 0 && dim < rank() && begin >= 0 && len >= 0 && begin + len <= shape[dim],
                 "slice dim {} [{}, +{}) of {}", dim, begin, len, tensor_str(*this));
  address += static_cast<uint64_t>(begin * strides[dim]) * dtype_size(dtype);
  shape[dim] = len;
}

TensorRef TensorRef::packed_at(uint64_t addr) const {
  TensorRef r;
  r.address = addr;
  r.dtype = dtype;
  r.shape = shape;
  r.strides.assign(shape.size(), 0);
  int64_t s = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (strides[i] == 0) continue;
    r.strides[i] = s;
    s *= shape[i];
  }
  return r;
}

std::optional<TensorRef> view_within(const TensorRef& whole, const TensorRef& part,
                                     uint64_t local) {
  const int rank = whole.rank();
  if (part.dtype != whole.dtype || part.rank() != rank || part.elements() == 0 ||
      whole.elements() == 0 || part.address < whole.address)
    return std::nullopt;
  const uint64_t size = dtype_size(whole.dtype);
  if ((part.address - whole.address) % size != 0) return std::nullopt;
  int64_t delta = static_cast<int64_t>((part.address - whole.address) / size);
  // The dims whole spans, by stride, largest first; each stride must exceed the reach of the
  // smaller ones, so that the offset splits into indices one way only.
  std::vector<int> dims;
  for (int d = 0; d < rank; ++d) {
    if (whole.shape[d] == 1) continue;
    if (whole.strides[d] <= 0) return std::nullopt;  // broadcast or reversed
    dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int a, int b) { return whole.strides[a] > whole.strides[b]; });
  for (size_t i = 0; i + 1 < dims.size(); ++i)
    if (whole.strides[dims[i]] < whole.strides[dims[i + 1]] * whole.shape[dims[i + 1]])
      return std::nullopt;
  std::vector<int64_t> index(rank, 0), step(rank, 1);
  for (int d : dims) {
    index[d] = delta / whole.strides[d];
    delta %= whole.strides[d];
  }
  if (delta != 0) return std::nullopt;
  const TensorRef dense = whole.packed_at(local);
  TensorRef r;
  r.dtype = whole.dtype;
  r.shape = part.shape;
  r.strides.assign(rank, 0);
  uint64_t at = local;
  for (int d = 0; d < rank; ++d) {
    if (part.shape[d] > 1) {
      if (whole.shape[d] == 1 || part.strides[d] <= 0 || part.strides[d] % whole.strides[d] != 0)
        return std::nullopt;
      step[d] = part.strides[d] / whole.strides[d];
    }
    if (index[d] + (part.shape[d] - 1) * step[d] >= whole.shape[d]) return std::nullopt;
    at += static_cast<uint64_t>(index[d] * dense.strides[d]) * size;
    r.strides[d] = dense.strides[d] * step[d];
  }
  r.address = at;
  return r;
}

TensorRef make_tensor(uint64_t address, DType dtype, Shape shape) {
  TensorRef t;
  t.address = address;
  t.dtype = dtype;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  return t;
}

TensorRef with_leading_dims(const TensorRef& t, int rank) {
  FRACSIM_ASSERT(rank >= t.rank(), "cannot view {} at rank {}", tensor_str(t), rank);
  TensorRef r = t;
  r.shape.insert(r.shape.begin(), rank - t.rank(), 1);
  r.strides.insert(r.strides.begin(), rank - t.rank(), 0);
  return r;
}

namespace {
template <typename Fn>
void walk(const Shape& shape, const Shape& sa, const Shape& sb, Fn&& fn) {
  const int rank = static_cast<int>(shape.size());
  if (num_elements(shape) == 0) return;
  if (rank == 0) {
    fn(0, 0);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = shape[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  while (true) {
    for (int64_t k = 0; k < inner; ++k) fn(oa + k * ia, ob + k * ib);
    int d = rank - 2;
    for (; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < shape[d]) break;
      oa -= sa[d] * shape[d];
      ob -= sb[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Dims where every stride is 0 are visited once: shrink them to extent 1.
Shape collapse_broadcast(const Shape& shape, const Shape& sa, const Shape& sb) {
  Shape s = shape;
  for (size_t i = 0; i < s.size(); ++i)
    if (sa[i] == 0 && sb[i] == 0 && s[i] > 0) s[i] = 1;
  return s;
}
}  // namespace

void for_each_offset(const TensorRef& t, const std::function<void(int64_t)>& fn) {
  walk(t.shape, t.strides, t.strides, [&](int64_t a, int64_t) { fn(a); });
}

void for_each_pair(const TensorRef& a, const TensorRef& b,
                   const std::function<void(int64_t, int64_t)>& fn) {
  FRACSIM_ASSERT(a.shape == b.shape, "pairing {} with {}", tensor_str(a), tensor_str(b));
  walk(collapse_broadcast(a.shape, a.strides, b.strides), a.strides, b.strides, fn);
}

std::string tensor_str(const TensorRef& t) {
  return fmt::format("{}@{:#x}[{}:{}]", dtype_name(t.dtype), t.address, fmt::join(t.shape, ","),
                     fmt::join(t.strides, ","));
}

}  // namespace fracsim::isa
