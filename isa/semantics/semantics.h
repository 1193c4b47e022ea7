// Shared pieces of the reference semantics (isa/reference.h): typed element access on a flat
// memory, dtype dispatch, the rounding helpers every family uses, and the registration of each
// family's ops. One file per family: linear.cpp, elementwise.cpp, window.cpp, reduction.cpp,
// ordering.cpp, conversion.cpp.
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

// double -> float, rounding to nearest even. Converting a double beyond float's range is
// undefined behaviour in C++, so the overflow rule is spelt out: from FLT_MAX + half an ulp up
// the result is infinity, below that it is FLT_MAX.
inline float to_float(double v) {
  constexpr double kOverflow = 0x1.ffffffp127;
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v >= kOverflow) return std::numeric_limits<float>::infinity();
  if (v <= -kOverflow) return -std::numeric_limits<float>::infinity();
  if (v > kMax) return std::numeric_limits<float>::max();
  if (v < -kMax) return -std::numeric_limits<float>::max();
  return static_cast<float>(v);
}


using ReferenceFn = std::function<void(const OpDef&, const Instruction&, MemoryView)>;
using ReferenceTable = std::map<std::string, ReferenceFn>;

// Each family adds its ops (by op name) to the table.
void register_linear(ReferenceTable& t);
void register_elementwise(ReferenceTable& t);
void register_window(ReferenceTable& t);
void register_reduction(ReferenceTable& t);
void register_ordering(ReferenceTable& t);
void register_conversion(ReferenceTable& t);

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

// An f16 element as stored: the IEEE binary16 bits. Only max and min compute on it (exactly,
// through the widened value), so it has no arithmetic.
struct Half {
  uint16_t bits = 0;
  double value() const { return half_to_double(bits); }
};

// One multiply-accumulate term of matmul and conv: acc + x*y. f32: one f32 accumulator, the
// product and the sum rounded separately (no fused multiply-add). i8/i16: the product is exact
// in i32 and the sum wraps around.
template <typename In, typename Acc>
Acc product_term(Acc acc, In x, In y) {
  if constexpr (std::is_floating_point_v<Acc>) {
    return acc + x * y;
  } else {
    return static_cast<Acc>(static_cast<uint32_t>(acc) +
                            static_cast<uint32_t>(static_cast<int32_t>(x) * y));
  }
}

// An element widened to double (f16 through its value, 64-bit integers possibly rounded).
template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return v.value();
  else
    return static_cast<double>(v);
}

// The dtype of a C++ element type.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  if constexpr (std::is_same_v<T, Half>) return DType::f16;
  if constexpr (std::is_same_v<T, double>) return DType::f64;
  if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  if constexpr (std::is_same_v<T, int16_t>) return DType::i16;
  if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::u8;
  if constexpr (std::is_same_v<T, uint16_t>) return DType::u16;
  if constexpr (std::is_same_v<T, uint32_t>) return DType::u32;
  if constexpr (std::is_same_v<T, uint64_t>) return DType::u64;
}

// A list of element types to dispatch over.
template <typename... Ts>
struct TypeList {};
// The dtypes most ops compute on (every op family has rows for these).
using CoreTypes = TypeList<float, int32_t, int16_t, int8_t>;
// Every dtype with a C++ element type (bf16 has no rows and none).
using AllTypes = TypeList<float, Half, double, int32_t, int16_t, int8_t, int64_t, uint8_t, uint16_t,
                          uint32_t, uint64_t>;

// Runs F<T>::run(args...) with T the C++ type of dtype `t`, among the types of `List`; a dtype
// outside the list is an InternalError (op validation admits only the dtype rows of isa/ops/).
template <template <typename> class F, typename... Ts, typename... Args>
void by_dtype_in(TypeList<Ts...>, DType t, const std::string& what, Args&&... args) {
  const bool ran = ((dtype_of<Ts>() == t ? (F<Ts>::run(args...), true) : false) || ...);
  if (!ran)
    throw InternalError(fmt::format("{}: no reference semantics for {}", what, dtype_name(t)));
}

// Runs F<T>::run(args...) with T the C++ type of dtype `t` (f32, i32, i16, i8).
template <template <typename> class F, typename... Args>
void by_dtype(DType t, const std::string& what, Args&&... args) {
  by_dtype_in<F>(CoreTypes{}, t, what, std::forward<Args>(args)...);
}

// An attribute's value by name.
inline int64_t attr(const OpDef& op, const Instruction& in, const std::string& name) {
  return in.attrs.at(op.attr_index(name));
}
inline double real_attr(const OpDef& op, const Instruction& in, const std::string& name) {
  return attr_to_real(attr(op, in, name));
}

}  // namespace fracsim::isa::semantics
