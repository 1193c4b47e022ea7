// Shared pieces of the reference semantics (isa/reference.h): typed element access on a flat
// memory, dtype dispatch, the rounding helpers every family uses, and the registration of each
// family's ops. One file per family: linear.cpp, elementwise.cpp, window.cpp, reduction.cpp,
// ordering.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "isa/error.h"
#include "isa/program.h"
#include "isa/reference.h"

namespace fracsim::isa::semantics {

using ReferenceFn = std::function<void(const OpDef&, const Instruction&, MemoryView)>;
using ReferenceTable = std::map<std::string, ReferenceFn>;

// Each family adds its ops (by op name) to the table.
void register_linear(ReferenceTable& t);
void register_elementwise(ReferenceTable& t);
void register_window(ReferenceTable& t);
void register_reduction(ReferenceTable& t);
void register_ordering(ReferenceTable& t);

template <typename T>
T load(MemoryView mem, const TensorRef& t, int64_t off) {
  T v;
  std::memcpy(&v, mem.data + t.address + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void store(MemoryView mem, const TensorRef& t, int64_t off, T v) {
  std::memcpy(mem.data + t.address + off * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// Clamps to T's range (integer saturation).
template <typename T>
T saturate(int64_t v) {
  return static_cast<T>(
      std::clamp<int64_t>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

// Integer division rounding to nearest, ties to even (the rule for integer means and scales).
int64_t div_round_half_even(int64_t num, int64_t den);

// Calls fn(offsets...) for every index of `shape` (last dim fastest), where offset k is the
// element offset of the index in a view with strides[k].
template <size_t K, typename Fn>
void for_each_index(const Shape& shape, const std::array<const Shape*, K>& strides, Fn&& fn) {
  const int rank = static_cast<int>(shape.size());
  if (num_elements(shape) == 0) return;
  std::array<int64_t, K> off{};
  if (rank == 0) {
    fn(off);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  while (true) {
    fn(off);
    int d = rank - 1;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < K; ++k) off[k] += (*strides[k])[d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= (*strides[k])[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Runs F<T>::run(args...) with T the C++ type of dtype `t` (f32, i32, i16, i8).
template <template <typename> class F, typename... Args>
void by_dtype(DType t, const std::string& what, Args&&... args) {
  switch (t) {
    case DType::f32:
      return F<float>::run(std::forward<Args>(args)...);
    case DType::i32:
      return F<int32_t>::run(std::forward<Args>(args)...);
    case DType::i16:
      return F<int16_t>::run(std::forward<Args>(args)...);
    case DType::i8:
      return F<int8_t>::run(std::forward<Args>(args)...);
    default:
      throw InternalError(fmt::format("{}: no reference semantics for {}", what, dtype_name(t)));
  }
}

// An attribute's value by name.
inline int64_t attr(const OpDef& op, const Instruction& in, const std::string& name) {
  return in.attrs.at(op.attr_index(name));
}
inline double real_attr(const OpDef& op, const Instruction& in, const std::string& name) {
  return attr_to_real(attr(op, in, name));
}

}  // namespace fracsim::isa::semantics
