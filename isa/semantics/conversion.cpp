// Reference semantics of the ops between dtypes and by data indices: convert, compare, select
// and gather.
//
// convert: to a float dtype, one rounding to nearest even from the exact source value (f64 to
// f16 directly, not through f32; beyond the range, infinity); float to integer, truncation
// toward zero, saturated to the destination's range, NaN giving 0; integer to integer, the low
// bits (two's complement wrap-around, numpy's astype).
// compare: 1 where the relation holds, else 0 (u8); floats by value, so -0 == +0 and a NaN only
// satisfies ne.
// select: the bits of a where cond != 0, else those of b.
// gather: the index is taken modulo the axis' extent A, rounding toward minus infinity.
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

template <typename T>
constexpr bool is_real() {
  return std::is_floating_point_v<T> || std::is_same_v<T, Half>;
}

template <typename To, typename From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, Half>) {
    return Half{half_from_double(to_double(v))};
  } else if constexpr (std::is_same_v<To, double>) {
    return to_double(v);
  } else if constexpr (std::is_same_v<To, float>) {
    if constexpr (std::is_integral_v<From>)
      return static_cast<float>(v);  // one rounding from the exact integer
    else
      return to_float(to_double(v));
  } else if constexpr (is_real<From>()) {
    const double t = std::trunc(to_double(v));
    if (std::isnan(t)) return To(0);
    const double lo = static_cast<double>(std::numeric_limits<To>::min());
    const double hi = std::ldexp(1.0, std::numeric_limits<To>::digits);  // max + 1, exact
    if (t < lo) return std::numeric_limits<To>::min();
    if (t >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(t);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From>
struct ConvertFrom {
  template <typename To>
  struct Into {
    static void run(const Instruction& in, MemoryView mem) {
      const TensorRef &x = in.operands[0], &out = in.operands[1];
      for_each_index<2>(out.shape, {&x.strides, &out.strides}, [&](const auto& o) {
        store<To>(mem, out, o[1], convert_value<To>(load<From>(mem, x, o[0])));
      });
    }
  };
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Into>(AllTypes{}, in.operands[1].dtype, op.name, in, mem);
  }
};

template <typename T>
bool relation(const std::string& fn, T x, T y) {
  const auto a = [&] {
    if constexpr (std::is_same_v<T, Half>)
      return x.value();
    else
      return x;
  }();
  const auto b = [&] {
    if constexpr (std::is_same_v<T, Half>)
      return y.value();
    else
      return y;
  }();
  if (fn == "eq") return a == b;
  if (fn == "ne") return a != b;
  if (fn == "lt") return a < b;
  if (fn == "gt") return a > b;
  if (fn == "le") return a <= b;
  if (fn == "ge") return a >= b;
  throw InternalError("compare: no reference semantics for fn " + fn);
}

template <typename T>
struct Compare {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const std::string& fn = op.enum_value("fn", in.attrs);
    const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
    for_each_index<3>(out.shape, {&a.strides, &b.strides, &out.strides}, [&](const auto& o) {
      const bool r = relation(fn, load<T>(mem, a, o[0]), load<T>(mem, b, o[1]));
      store<uint8_t>(mem, out, o[2], r ? 1 : 0);
    });
  }
};

template <typename T>
struct Select {
  static void run(const OpDef&, const Instruction& in, MemoryView mem) {
    const TensorRef &c = in.operands[0], &a = in.operands[1], &b = in.operands[2],
                    &out = in.operands[3];
    for_each_index<4>(
        out.shape, {&c.strides, &a.strides, &b.strides, &out.strides}, [&](const auto& o) {
          const bool pick_a = load<uint8_t>(mem, c, o[0]) != 0;
          store<T>(mem, out, o[3], pick_a ? load<T>(mem, a, o[1]) : load<T>(mem, b, o[2]));
        });
  }
};

template <typename T>
struct GatherOf {
  template <typename I>
  struct At {
    static void run(const Instruction& in, MemoryView mem) {
      const TensorRef &x = in.operands[0], &idx = in.operands[1], &out = in.operands[2];
      const int64_t extent = x.shape[2];
      if (extent == 0) return;
      const Shape& s = out.shape;
      for (int64_t p0 = 0; p0 < s[0]; ++p0)
        for (int64_t p1 = 0; p1 < s[1]; ++p1)
          for (int64_t k = 0; k < s[2]; ++k)
            for (int64_t q0 = 0; q0 < s[3]; ++q0)
              for (int64_t q1 = 0; q1 < s[4]; ++q1) {
                const std::array<int64_t, 5> i{p0, p1, k, q0, q1};
                auto offset = [&](const TensorRef& t) {
                  int64_t off = 0;
                  for (size_t d = 0; d < 5; ++d) off += i[d] * t.strides[d];
                  return off;
                };
                int64_t a = static_cast<int64_t>(load<I>(mem, idx, offset(idx))) % extent;
                if (a < 0) a += extent;
                const int64_t src = p0 * x.strides[0] + p1 * x.strides[1] + a * x.strides[2] +
                                    q0 * x.strides[3] + q1 * x.strides[4];
                store<T>(mem, out, offset(out), load<T>(mem, x, src));
              }
    }
  };
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<At>(TypeList<int32_t, int64_t>{}, in.operands[1].dtype, op.name, in, mem);
  }
};

}  // namespace

void register_conversion(ReferenceTable& t) {
  t["convert"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<ConvertFrom>(AllTypes{}, in.operands[0].dtype, op.name, op, in, mem);
  };
  t["compare"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Compare>(AllTypes{}, in.operands[0].dtype, op.name, op, in, mem);
  };
  t["select"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Select>(AllTypes{}, in.operands[1].dtype, op.name, op, in, mem);
  };
  t["gather"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<GatherOf>(AllTypes{}, in.operands[0].dtype, op.name, op, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
