// Reference semantics of the reduction ops: reduce (sum, mean, max, min, prod over up to three
// axes).
//
// out[p0,p1,p2] folds the terms in[p0,p1,p2,r0,r1,r2] in index order (r0 outermost) into one
// accumulator of the output's type: acc = combine(acc, term). The fold starts from out's old
// value with accumulate, else from 0 (sum, mean), 1 (prod) or the first term (max, min). With no
// terms at all (an R extent of 0) out is that start value: unchanged with accumulate, else 1 for
// prod (the empty product) and 0 for the other fns.
//
// Why a fold with the earlier value on the left: the decomposer splits R serially (later pieces
// accumulate onto out, so the fold simply continues) and across children (the LFU combines the
// partials in child order with eltwise fn(out, partial)). Both reproduce the whole op exactly
// when combine is associative and equals the LFU's eltwise combine on every pair of values:
//  sum:  f32 acc + x (an f32 sum reassociated across children is within the usual bound); f64
//        likewise in double;
//        integers widen to i32 and wrap around (two's complement).
//  mean: f32 only; acc + x / (float)divisor term by term, so that pieces add the same terms.
//  prod: f32 acc * x (reassociated across children within the same bound as a sum's, relative to
//        |result|); integers widen to i32 and wrap around, as eltwise mul on i32.
//  max:  acc > x ? acc : x, as eltwise max, except that a NaN accumulator is kept: NaN
//        propagates, and of several NaNs the first one in index order wins. Equal values (+0
//        and -0) keep the later one, as eltwise does. min likewise with <.
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

enum class ReduceFn { sum, mean, max, min, prod };

ReduceFn reduce_fn(const OpDef& op, const Instruction& in) {
  const std::string& fn = op.enum_value("fn", in.attrs);
  if (fn == "sum") return ReduceFn::sum;
  if (fn == "mean") return ReduceFn::mean;
  if (fn == "max") return ReduceFn::max;
  if (fn == "min") return ReduceFn::min;
  if (fn == "prod") return ReduceFn::prod;
  throw InternalError("reduce: no reference semantics for fn " + fn);
}

// The ordering combines: the earlier value is `acc`, the later one `x`.
template <typename T>
T keep_max(T acc, T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(acc)) return acc;
  return acc > x ? acc : x;
}
template <typename T>
T keep_min(T acc, T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(acc)) return acc;
  return acc < x ? acc : x;
}

template <typename In>
struct Reduce {
  // f32 accumulates in f32, f64 in f64; every integer input in i32 (the output dtype of
  // isa/ops/reduce.yaml).
  using Acc = std::conditional_t<std::is_same_v<In, double>, double,
                                 std::conditional_t<std::is_floating_point_v<In>, float, int32_t>>;

  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const TensorRef &x = in.operands[0], &out = in.operands[1];
    const ReduceFn fn = reduce_fn(op, in);
    const bool accumulate = attr(op, in, "accumulate") != 0;
    float divisor = 1.0f;
    if (fn == ReduceFn::mean) {
      if constexpr (!std::is_floating_point_v<In>)
        throw InternalError("reduce: mean on integer operands (bind_dims rejects it)");
      const int64_t d = attr(op, in, "divisor");
      if (d < 1)
        throw ConfigError(fmt::format("reduce: mean needs a divisor of at least 1, got {}", d));
      divisor = static_cast<float>(d);
    }
    const Shape kept_strides(x.strides.begin(), x.strides.begin() + 3);
    const int64_t R0 = x.shape[3], R1 = x.shape[4], R2 = x.shape[5];
    const int64_t s0 = x.strides[3], s1 = x.strides[4], s2 = x.strides[5];
    for_each_index<2>(out.shape, {&kept_strides, &out.strides}, [&](const auto& o) {
      Acc acc = accumulate ? load<Acc>(mem, out, o[1]) : Acc(fn == ReduceFn::prod ? 1 : 0);
      bool started =
          accumulate || fn == ReduceFn::sum || fn == ReduceFn::mean || fn == ReduceFn::prod;
      for (int64_t r0 = 0; r0 < R0; ++r0)
        for (int64_t r1 = 0; r1 < R1; ++r1)
          for (int64_t r2 = 0; r2 < R2; ++r2) {
            const Acc v = static_cast<Acc>(load<In>(mem, x, o[0] + r0 * s0 + r1 * s1 + r2 * s2));
            if (!started) {
              acc = v;
              started = true;
              continue;
            }
            switch (fn) {
              case ReduceFn::sum:
                if constexpr (std::is_floating_point_v<Acc>) {
                  acc = acc + v;
                } else {
                  acc = static_cast<Acc>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(v));
                }
                break;
              case ReduceFn::mean:
                if constexpr (std::is_floating_point_v<Acc>) acc = acc + v / divisor;
                break;
              case ReduceFn::prod:
                if constexpr (std::is_floating_point_v<Acc>) {
                  acc = acc * v;
                } else {
                  acc = static_cast<Acc>(static_cast<uint32_t>(acc) * static_cast<uint32_t>(v));
                }
                break;
              case ReduceFn::max:
                acc = keep_max(acc, v);
                break;
              case ReduceFn::min:
                acc = keep_min(acc, v);
                break;
            }
          }
      store<Acc>(mem, out, o[1], acc);
    });
  }
};

}  // namespace

void register_reduction(ReferenceTable& t) {
  t["reduce"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<Reduce>(TypeList<float, double, int32_t, int16_t, int8_t>{}, in.operands[0].dtype,
                        op.name, op, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
