#include "isa/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"

namespace fracsim::isa {

int64_t num_elements(const Shape& shape) {
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

TensorRef TensorRef::slice(int dim, int64_t begin, int64_t len) const {
  FRACSIM_ASSERT(dim >= 0 && dim < rank() && begin >= 0 && len >= 0 && begin + len <= shape[dim],
                 "slice dim {} [{}, +{}) of {}", dim, begin, len, tensor_str(*this));
  TensorRef r = *this;
  r.address += static_cast<uint64_t>(begin * strides[dim]) * dtype_size(dtype);
  r.shape[dim] = len;
  return r;
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
