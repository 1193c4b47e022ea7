// Shapes and tensor references. A TensorRef names a strided view of a memory: the program's root
// memory, or a node's local memory after the node has loaded a tile. Strides are in elements and
// may be 0 along a broadcast dimension (a bias row seen as a matrix).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "isa/dtype.h"

namespace fracsim::isa {

// Held inline up to rank 8 (kMaxRank, isa/encoding.h): views are copied with every piece, and
// this spares each copy a heap allocation.
using Shape = boost::container::small_vector<int64_t, 8>;

int64_t num_elements(const Shape& shape);
// The same of a list of extents held elsewhere (a layer's kernel).
inline int64_t num_elements(const std::vector<int64_t>& extents) {
  return num_elements(Shape(extents.begin(), extents.end()));
}
std::string shape_str(const Shape& shape);  // "[64,784]"
Shape contiguous_strides(const Shape& shape);

struct TensorRef {
  uint64_t address = 0;  // bytes
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;  // elements, one per dim

  bool operator==(const TensorRef& o) const {
    return address == o.address && dtype == o.dtype && shape == o.shape && strides == o.strides;
  }
  bool operator!=(const TensorRef& o) const { return !(*this == o); }

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t elements() const { return num_elements(shape); }
  // Elements actually stored: dims with stride 0 count once.
  int64_t stored_elements() const;
  uint64_t stored_bytes() const { return stored_elements() * dtype_size(dtype); }
  // Smallest byte interval [begin, end) that holds every element; {address, address} when empty.
  std::pair<uint64_t, uint64_t> byte_span() const;
  // The view restricted to [begin, begin+len) along dim.
  TensorRef slice(int dim, int64_t begin, int64_t len) const;
  // The same restriction applied to this view itself.
  void narrow(int dim, int64_t begin, int64_t len);
  // The same dims stored densely at `address` (stride 0 kept where this has stride 0).
  TensorRef packed_at(uint64_t address) const;
};

// Where the elements of `part`, a view of the same memory, lie in a dense copy of `whole` at
// `local` (whole.packed_at(local)): empty unless every element of `part` is an element of `whole`
// (same dtype and rank; each of its strides a multiple of whole's along a dim it spans). `whole`
// must not alias itself (its strides nest), so that each address names one index.
std::optional<TensorRef> view_within(const TensorRef& whole, const TensorRef& part, uint64_t local);

// Whether two views share a byte. Exact for views of one dtype and the same strides (tiles of
// one tensor, however strided), unless solving for the element offsets between them takes more
// than 65,536 steps; otherwise true when their byte spans meet. Never false when they share a
// byte.
bool views_overlap(const TensorRef& a, const TensorRef& b);

TensorRef make_tensor(uint64_t address, DType dtype, Shape shape);

// The same view at a higher rank: leading dims of extent 1 (stride 0) are added.
TensorRef with_leading_dims(const TensorRef& t, int rank);

// Calls fn(element offset in elements from address) for every element, last dim fastest.
void for_each_offset(const TensorRef& t, const std::function<void(int64_t)>& fn);
// Calls fn(offset_a, offset_b) pairing the elements of two views of equal shape; dims where both
// strides are 0 are visited once.
void for_each_pair(const TensorRef& a, const TensorRef& b,
                   const std::function<void(int64_t, int64_t)>& fn);

std::string tensor_str(const TensorRef& t);  // "f32@0x40[64,784:784,1]"

}  // namespace fracsim::isa
