// Reference semantics of the element-wise ops: eltwise (binary, broadcasting through stride 0)
// and activation.
//
// Integer rules: add, sub and mul wrap around in i32 (the accumulator type) and saturate in i8
// and i16; div truncates toward zero and saturates (x / 0 is the dtype's max for x > 0, its min
// for x < 0, and 0 for 0); max and min are exact. u8 is numpy's uint8: add, sub and mul wrap
// modulo 2^8, div is floor division (with the rule above for x / 0). i64 add, sub and mul wrap
// around; i32 and i64 pow multiply out, wrapping. u16, u32, u64, i64, f16 and f64 have max and
// min: exact, f16 compared through its value, NaN propagating as in f32; f64 also add and mul
// (C's double ops). f64 activations (exp, log) are computed and kept in double.
// Activations on integers read the input as fixed point with `frac_bits` fraction bits: out =
// saturate(round_half_even(f(x / 2^frac_bits) * 2^frac_bits)). Float activations other than relu,
// leaky_relu, gelu_tanh and gelu_erf are computed in double precision and rounded once to f32.
// f32 gelu_tanh and gelu_erf round each step to f32 as the element-wise ops of the graph they
// replace do (eltwise mul, div and add, activation tanh or erf), so that a fused program equals
// the unfused one bit for bit.
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

// The remainder of x / y with the dividend's sign (fmod) or the divisor's (mod); integers by 0
// give 0 (and INT_MIN by -1 gives 0, the exact remainder).
template <typename T>
T remainder(const std::string& fn, T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(x, y);
    if (fn == "mod" && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  } else {
    if (y == 0) return T(0);
    if constexpr (std::is_signed_v<T>) {
      if (y == T(-1)) return T(0);
    }
    T r = static_cast<T>(x % y);
    if constexpr (std::is_signed_v<T>) {
      if (fn == "mod" && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    }
    return r;
  }
}

// x^y of i32 or i64, multiplied out with wrap-around; a negative exponent gives the real
// result truncated toward zero.
template <typename T>
T integer_pow(T x, T y) {
  if (y < 0) return x == 1 ? T(1) : (x == -1 ? (y % 2 == 0 ? T(1) : T(-1)) : T(0));
  using U = std::make_unsigned_t<T>;
  U r = 1, b = static_cast<U>(x);
  for (U e = static_cast<U>(y); e != 0; e >>= 1) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(r);
}

template <typename T>
T binary(const std::string& fn, T x, T y) {
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    if (fn == "pow") return integer_pow(x, y);
  }
  if constexpr (std::is_same_v<T, Half>) {
    if (fn == "fmod") return Half{half_from_double(std::fmod(x.value(), y.value()))};
  } else {
    if (fn == "mod" || fn == "fmod") return remainder(fn, x, y);
  }
  if constexpr (std::is_floating_point_v<T>) {
    // pow: in double, rounded once.
    if (fn == "pow")
      return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
  if constexpr (std::is_same_v<T, Half>) {
    // f16: max and min only, exact (compared through the widened values), NaN as for f32.
    const double a = x.value(), b = y.value();
    if (fn == "max") return a > b || std::isnan(a) ? x : y;
    if (fn == "min") return a < b || std::isnan(a) ? x : y;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (fn == "add") return x + y;
    if (fn == "sub") return x - y;
    if (fn == "mul") return x * y;
    if (fn == "div") return x / y;
    // NaN propagates from either side, so that partial maxima combine like the whole.
    if (fn == "max") return x > y || std::isnan(x) ? x : y;
    if (fn == "min") return x < y || std::isnan(x) ? x : y;
  } else if constexpr (sizeof(T) == 8 || std::is_same_v<T, uint16_t> ||
                       std::is_same_v<T, uint32_t>) {
    // i64 add, sub and mul wrap around (numpy's int64).
    if constexpr (std::is_same_v<T, int64_t>) {
      using U = uint64_t;
      if (fn == "add") return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
      if (fn == "sub") return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
      if (fn == "mul") return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
    }
    // u16, u32, u64, i64: max and min.
    if (fn == "max") return std::max(x, y);
    if (fn == "min") return std::min(x, y);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    // u8 is numpy's uint8: add, sub and mul wrap modulo 2^8; div is floor division (truncation,
    // for unsigned values), x / 0 the max for x > 0 and 0 for 0 (the ISA's saturating rule).
    const uint32_t a = x, b = y;
    if (fn == "add") return static_cast<T>(a + b);
    if (fn == "sub") return static_cast<T>(a - b);
    if (fn == "mul") return static_cast<T>(a * b);
    if (fn == "div") return b == 0 ? (a > 0 ? std::numeric_limits<T>::max() : T(0)) : T(a / b);
    if (fn == "max") return std::max(x, y);
    if (fn == "min") return std::min(x, y);
  } else {
    const int64_t a = x, b = y;
    // i32 is the accumulator type: it wraps, like every sum the ops accumulate, so that the LFU
    // combining i32 partial sums gives what one accumulator gives. i8 and i16 saturate.
    if constexpr (std::is_same_v<T, int32_t>) {
      if (fn == "add") return static_cast<T>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
      if (fn == "sub") return static_cast<T>(static_cast<uint32_t>(x) - static_cast<uint32_t>(y));
      if (fn == "mul") return static_cast<T>(static_cast<uint32_t>(x) * static_cast<uint32_t>(y));
    }
    if (fn == "add") return saturate<T>(a + b);
    if (fn == "sub") return saturate<T>(a - b);
    if (fn == "mul") return saturate<T>(a * b);
    if (fn == "div") {
      if (b == 0)
        return a > 0 ? std::numeric_limits<T>::max()
                     : (a < 0 ? std::numeric_limits<T>::min() : T(0));
      return saturate<T>(a / b);
    }
    if (fn == "max") return std::max(x, y);
    if (fn == "min") return std::min(x, y);
  }
  throw InternalError(fmt::format("eltwise: no reference semantics for fn {} on {}", fn,
                                  dtype_name(dtype_of<T>())));
}

template <typename T>
struct Eltwise {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const std::string& fn = op.enum_value("fn", in.attrs);
    const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
    for_each_index<3>(out.shape, {&a.strides, &b.strides, &out.strides}, [&](const auto& o) {
      store<T>(mem, out, o[2], binary(fn, load<T>(mem, a, o[0]), load<T>(mem, b, o[1])));
    });
  }
};

// gelu_tanh on f32: x3 = (x x) x, inner = x + x3 c, t = tanh(inner k) (in double, rounded once),
// out = (x 0.5) (t + 1), every product and sum rounded to f32.
float gelu_tanh(float x) {
  const float x3 = (x * x) * x;
  const float inner = x + x3 * kGeluTanhC;
  const float t = to_float(std::tanh(static_cast<double>(inner * kGeluTanhK)));
  return (x * 0.5f) * (t + 1.0f);
}

// gelu_erf on f32: d = x / s, e = erf d (in double, rounded once), out = (x (e + 1)) 0.5, every
// quotient, sum and product rounded to f32.
float gelu_erf(float x) {
  const float e = to_float(std::erf(static_cast<double>(x / kGeluErfS)));
  return (x * (e + 1.0f)) * 0.5f;
}

double activate(const std::string& fn, double x, double alpha) {
  if (fn == "relu") return x > 0 ? x : 0.0;  // (integer path only; f32 relu is exact below)
  if (fn == "leaky_relu") return x > 0 ? x : alpha * x;
  if (fn == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (fn == "tanh") return std::tanh(x);
  if (fn == "gelu" || fn == "gelu_erf") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (fn == "gelu_tanh")
    return 0.5 * x * (1.0 + std::tanh(kGeluTanhK * (x + kGeluTanhC * x * x * x)));
  if (fn == "exp") return std::exp(x);
  if (fn == "log") return std::log(x);
  if (fn == "sqrt") return std::sqrt(x);
  if (fn == "rsqrt") return 1.0 / std::sqrt(x);
  if (fn == "erf") return std::erf(x);
  if (fn == "abs") return std::fabs(x);
  if (fn == "neg") return -x;
  if (fn == "floor") return std::floor(x);
  if (fn == "ceil") return std::ceil(x);
  if (fn == "round") return std::nearbyint(x);  // half to even in the default rounding mode
  if (fn == "sign") return x > 0 ? 1.0 : (x < 0 ? -1.0 : (std::isnan(x) ? x : 0.0));
  if (fn == "reciprocal") return 1.0 / x;
  // log1p(exp x) loses nothing for large x (exp overflows to infinity, as the exact value does
  // not: x + log1p(exp -x) is used above 0).
  if (fn == "softplus") return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  if (fn == "softsign") return x / (1.0 + std::fabs(x));
  if (fn == "elu") return x > 0 ? x : alpha * std::expm1(x);
  if (fn == "celu") return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
  if (fn == "thresholded_relu") return x > alpha ? x : 0.0;
  if (fn == "sin") return std::sin(x);
  if (fn == "cos") return std::cos(x);
  if (fn == "tan") return std::tan(x);
  if (fn == "asin") return std::asin(x);
  if (fn == "acos") return std::acos(x);
  if (fn == "atan") return std::atan(x);
  if (fn == "sinh") return std::sinh(x);
  if (fn == "cosh") return std::cosh(x);
  if (fn == "asinh") return std::asinh(x);
  if (fn == "acosh") return std::acosh(x);
  if (fn == "atanh") return std::atanh(x);
  throw InternalError("activation: no reference semantics for fn " + fn);
}

template <typename T>
struct Activation {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const std::string& fn = op.enum_value("fn", in.attrs);
    const double alpha = real_attr(op, in, "alpha");
    const int64_t frac_bits = attr(op, in, "frac_bits");
    const TensorRef &x = in.operands[0], &out = in.operands[1];
    for_each_index<2>(out.shape, {&x.strides, &out.strides}, [&](const auto& o) {
      const T v = load<T>(mem, x, o[0]);
      T r;
      if constexpr (std::is_floating_point_v<T>) {
        if (fn == "relu")
          r = v > T(0) ? v : T(0);
        else if (fn == "leaky_relu")
          r = v > T(0) ? v : static_cast<T>(alpha) * v;
        else if (std::is_same_v<T, float> && fn == "gelu_tanh")
          r = static_cast<T>(gelu_tanh(static_cast<float>(v)));
        else if (std::is_same_v<T, float> && fn == "gelu_erf")
          r = static_cast<T>(gelu_erf(static_cast<float>(v)));
        else if constexpr (std::is_same_v<T, double>)
          r = activate(fn, v, alpha);  // f64: in double, no rounding to f32
        else
          r = to_float(activate(fn, v, alpha));
      } else {
        const double scale = std::ldexp(1.0, static_cast<int>(frac_bits));
        const double y = activate(fn, static_cast<double>(v) / scale, alpha) * scale;
        // nearbyint rounds half to even in the default rounding mode; clamp before converting.
        const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
        r = static_cast<T>(std::isnan(y) ? 0.0 : std::clamp(std::nearbyint(y), lo, hi));
      }
      store<T>(mem, out, o[1], r);
    });
  }
};

// Rounds a real to T: f32 by the usual conversion, integers half to even and saturated.
template <typename T>
T from_real(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    return static_cast<T>(std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), lo, hi));
  }
}

template <typename T>
struct Fill {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const T v = from_real<T>(real_attr(op, in, "value"));
    const TensorRef& out = in.operands[0];
    for_each_index<1>(out.shape, {&out.strides},
                      [&](const auto& o) { store<T>(mem, out, o[0], v); });
  }
};

}  // namespace

void register_elementwise(ReferenceTable& t) {
  t["fill"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Fill>(in.operands[0].dtype, op.name, op, in, mem);
  };
  t["eltwise"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Eltwise>(AllTypes{}, in.operands[2].dtype, op.name, op, in, mem);
  };
  t["activation"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Activation>(TypeList<float, double, int32_t, int16_t, int8_t>{},
                            in.operands[1].dtype, op.name, op, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
