// Reference semantics of the window ops: conv1d/2d/3d, pool1d/2d/3d and lrn.
//
// Every window op reads its input through the sliding windows its op definition declares
// (DimKind::window): output index o, kernel tap k reads input index o*stride - pad_begin +
// k*dilation, and a tap outside [0, extent) reads the padding. The pads are the instruction's own
// attributes: a piece sliced from a larger instruction carries the pads that remain at its edges
// (isa/decompose/piece.cpp), so the same rule gives the piece exactly the whole op's windows.
//
//  conv:  out = (accumulate ? out : 0) + sum over ci, then kd, kh, kw (this order) of in * w;
//         padding taps are skipped (zero padding). f32: one f32 accumulator, acc = acc + x*y,
//         no fused multiply-add. i8/i16: i32 accumulator with two's-complement wrap-around.
//  pool:  max over the window's input elements (padding ignored); avg sums in window order (f32
//         in f32, integers in i64) and divides by the kernel size (count_include_pad) or by the
//         number of input elements the window covers: f32 rounds the one division, integers
//         round half to even and saturate. A window that covers no input element (possible only
//         with dilation, when every tap falls in the padding) gives 0. A piece of the kernel's
//         taps (kernel_h its taps, tap_h0/tap_h1 the whole kernel's taps before and after them,
//         in_h0/in_h1 the whole input's rows before and after its operand) starts from the old
//         output with accumulate and, unless final, stores the running max (the dtype's lowest
//         value while no element was seen) or the running sum (f32) instead of the result;
//         the final piece divides by, and tests for 0, the whole window's count. So serial
//         pieces in tap order give the whole op's result bit for bit (max: for NaN-free input).
//  pool2d_argmax: the flattened whole-input index of the element pool's max picks (the first
//         maximum in tap order, by the same comparison), index_base + n*index_stride_n +
//         c*index_stride_c + h*index_stride_h + w*index_stride_w with (n, c, h, w) the element's
//         position in the piece's input; i32 with wrap-around; -1 for a window of padding only.
//  lrn:   a channel window: output channel c sums the squares of input channels
//         [c - pad_c0, c - pad_c0 + size) inside the input, in f32 and channel order; its centre
//         is input channel c + floor((size-1)/2) - pad_c0 (c itself for a whole tensor, whose
//         pad_c0 is floor((size-1)/2)), zero when it falls in the padding. The quotient
//         x / (bias + alpha/size * sum)^beta is computed in double and rounded once to f32.
//         Integers are fixed point with frac_bits fraction bits: squares summed exactly in i64,
//         the quotient rounded half to even and saturated.
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

// Window ops have at most three spatial axes; fewer are padded in front with axes of extent 1,
// so that one loop nest serves 1-D, 2-D and 3-D ops.
constexpr int kAxes = 3;

// One window axis of an instruction: the window dim's parameters and the element strides of the
// operand axes bound to it.
struct Axis {
  int64_t in = 1, out = 1;  // input (window dim) and output extents
  int64_t kernel = 1, stride = 1, dilation = 1, pad = 0;
  int64_t in_stride = 0, out_stride = 0, w_stride = 0;  // w_stride: the kernel axis of conv weights
  // A pool piece of a kernel's taps: its whole window extends tap_before taps before its first
  // and tap_after after its last; the whole input in_before elements before the operand's first
  // and in_after after its last (all 0 for an instruction that is not such a piece).
  int64_t tap_before = 0, tap_after = 0, in_before = 0, in_after = 0;

  // The input index that kernel tap k of output o reads; it may lie in the padding.
  int64_t at(int64_t o, int64_t k) const { return o * stride - pad + k * dilation; }
  bool inside(int64_t i) const { return i >= 0 && i < in; }
  // The taps of output o's whole window: all of them (count_include_pad), or those that read an
  // element of the whole input.
  int64_t whole_taps(int64_t o, bool include_pad) const {
    if (include_pad) return tap_before + kernel + tap_after;
    int64_t n = 0;
    for (int64_t k = -tap_before; k < kernel + tap_after; ++k) {
      const int64_t i = at(o, k);
      n += i >= -in_before && i < in + in_after ? 1 : 0;
    }
    return n;
  }
};

using Axes = std::array<Axis, kAxes>;

int axis_of(const OperandDef& od, const std::string& dim) {
  auto it = std::find(od.dims.begin(), od.dims.end(), dim);
  FRACSIM_ASSERT(it != od.dims.end(), "operand {} has no dim {}", od.name, dim);
  return static_cast<int>(it - od.dims.begin());
}

// The window axes of `in`, read from the op's window dims (in declaration order, outermost
// first). The input is operand 0, the output the last operand; a kernel that is a dim (conv's
// Kh, Kw) is an axis of operand 1, the weights.
Axes window_axes(const OpDef& op, const Instruction& in) {
  std::vector<Axis> found;
  const OperandDef &x = op.operands.front(), &out = op.operands.back();
  for (const DimDef& d : op.dims) {
    if (d.kind != DimKind::window) continue;
    const WindowDef& w = d.window;
    Axis a;
    const int xa = axis_of(x, d.name), oa = axis_of(out, w.of);
    a.in = in.operands.front().shape[xa];
    a.in_stride = in.operands.front().strides[xa];
    a.out = in.operands.back().shape[oa];
    a.out_stride = in.operands.back().strides[oa];
    const int kd = w.kernel.name.empty() ? -1 : op.dim_index(w.kernel.name);
    if (kd >= 0 && !op.dims[kd].extent_attr.empty()) {
      const DimDef& k = op.dims[kd];
      a.kernel = attr(op, in, k.extent_attr);
      if (!k.offset_attr.empty()) a.tap_before = attr(op, in, k.offset_attr);
      if (!k.after_attr.empty()) a.tap_after = attr(op, in, k.after_attr);
    } else if (kd >= 0) {
      const int ka = axis_of(op.operands[1], w.kernel.name);
      a.kernel = in.operands[1].shape[ka];
      a.w_stride = in.operands[1].strides[ka];
    } else {
      a.kernel = w.kernel.name.empty() ? w.kernel.value : attr(op, in, w.kernel.name);
    }
    auto term = [&](const WindowTerm& t) {
      return t.name.empty() ? t.value : attr(op, in, t.name);
    };
    a.stride = term(w.stride);
    a.dilation = term(w.dilation);
    a.pad = attr(op, in, w.pad_begin);
    // The input's frame: a window dim with an `after` attribute has its `offset` as the input
    // elements before (pool2d_argmax's offset is its flattened index instead, and has no after).
    if (!d.after_attr.empty()) {
      a.in_before = attr(op, in, d.offset_attr);
      a.in_after = attr(op, in, d.after_attr);
    }
    found.push_back(a);
  }
  FRACSIM_ASSERT(!found.empty() && found.size() <= kAxes, "{}: {} window dims", op.name,
                 found.size());
  Axes axes;
  std::copy(found.begin(), found.end(), axes.end() - found.size());
  return axes;
}

// Calls fn(o0, o1, o2, out_offset) for every output position of the three axes, last fastest.
template <typename Fn>
void for_each_output(const Axes& ax, int64_t base, Fn&& fn) {
  for (int64_t o0 = 0; o0 < ax[0].out; ++o0)
    for (int64_t o1 = 0; o1 < ax[1].out; ++o1)
      for (int64_t o2 = 0; o2 < ax[2].out; ++o2)
        fn(o0, o1, o2,
           base + o0 * ax[0].out_stride + o1 * ax[1].out_stride + o2 * ax[2].out_stride);
}

// Calls fn(input_offset, weight_offset) for every kernel tap of output (o0, o1, o2) that reads
// an input element, in tap order (last axis fastest); padding taps are skipped.
template <typename Fn>
void for_each_tap(const Axes& ax, int64_t o0, int64_t o1, int64_t o2, Fn&& fn) {
  for (int64_t k0 = 0; k0 < ax[0].kernel; ++k0) {
    const int64_t i0 = ax[0].at(o0, k0);
    if (!ax[0].inside(i0)) continue;
    for (int64_t k1 = 0; k1 < ax[1].kernel; ++k1) {
      const int64_t i1 = ax[1].at(o1, k1);
      if (!ax[1].inside(i1)) continue;
      for (int64_t k2 = 0; k2 < ax[2].kernel; ++k2) {
        const int64_t i2 = ax[2].at(o2, k2);
        if (!ax[2].inside(i2)) continue;
        fn(i0 * ax[0].in_stride + i1 * ax[1].in_stride + i2 * ax[2].in_stride,
           k0 * ax[0].w_stride + k1 * ax[1].w_stride + k2 * ax[2].w_stride);
      }
    }
  }
}

// in [N, G, Ci, spatial...], w [G, Co, Ci, kernel...], out [N, G, Co, spatial...].
template <typename In, typename Acc>
void conv(const OpDef& op, const Instruction& in, MemoryView mem) {
  const TensorRef &x = in.operands[0], &w = in.operands[1], &out = in.operands[2];
  const bool accumulate = attr(op, in, "accumulate") != 0;
  const Axes ax = window_axes(op, in);
  const int64_t N = x.shape[0], G = x.shape[1], Ci = x.shape[2], Co = w.shape[1];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t co = 0; co < Co; ++co) {
        const int64_t xb = n * x.strides[0] + g * x.strides[1];
        const int64_t wb = g * w.strides[0] + co * w.strides[1];
        const int64_t ob = n * out.strides[0] + g * out.strides[1] + co * out.strides[2];
        for_each_output(ax, ob, [&](int64_t o0, int64_t o1, int64_t o2, int64_t o) {
          Acc acc = accumulate ? load<Acc>(mem, out, o) : Acc(0);
          for (int64_t ci = 0; ci < Ci; ++ci) {
            const int64_t xc = xb + ci * x.strides[2], wc = wb + ci * w.strides[2];
            for_each_tap(ax, o0, o1, o2, [&](int64_t xo, int64_t wo) {
              acc = product_term(acc, load<In>(mem, x, xc + xo), load<In>(mem, w, wc + wo));
            });
          }
          store<Acc>(mem, out, o, acc);
        });
      }
}

void conv_by_dtype(const OpDef& op, const Instruction& in, MemoryView mem) {
  switch (in.operands[0].dtype) {
    case DType::f32:
      return conv<float, float>(op, in, mem);
    case DType::i8:
      return conv<int8_t, int32_t>(op, in, mem);
    case DType::i16:
      return conv<int16_t, int32_t>(op, in, mem);
    default:
      break;
  }
  throw InternalError(
      fmt::format("{}: no reference semantics for {}", op.name, dtype_name(in.operands[0].dtype)));
}

// in [N, C, spatial...], out [N, C, spatial...].
template <typename T>
struct Pool {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const TensorRef &x = in.operands[0], &out = in.operands[1];
    const bool is_max = op.enum_value("fn", in.attrs) == "max";
    const bool include_pad = attr(op, in, "count_include_pad") != 0;
    // A piece of the kernel's taps continues the windows of the pieces before it (accumulate:
    // max with, or add to, the output's old value) and only the last (final) completes them.
    const bool accumulate = attr(op, in, "accumulate") != 0;
    const bool final = attr(op, in, "final") != 0;
    const Axes ax = window_axes(op, in);
    using Sum = std::conditional_t<std::is_floating_point_v<T>, float, int64_t>;
    for (int64_t n = 0; n < x.shape[0]; ++n)
      for (int64_t c = 0; c < x.shape[1]; ++c) {
        const int64_t xb = n * x.strides[0] + c * x.strides[1];
        const int64_t ob = n * out.strides[0] + c * out.strides[1];
        for_each_output(ax, ob, [&](int64_t o0, int64_t o1, int64_t o2, int64_t o) {
          bool seen = accumulate;  // the old output counts as the window's elements so far
          T best = accumulate ? load<T>(mem, out, o) : T{};
          Sum sum = accumulate ? static_cast<Sum>(load<T>(mem, out, o)) : Sum{};
          for_each_tap(ax, o0, o1, o2, [&](int64_t xo, int64_t) {
            const T v = load<T>(mem, x, xb + xo);
            if (!seen || v > best) best = v;
            sum = static_cast<Sum>(sum + v);
            seen = true;
          });
          T r{};
          if (!final) {
            // A partial result: the running max (the lowest value before any element) or sum.
            if (is_max)
              r = seen ? best : std::numeric_limits<T>::lowest();
            else if constexpr (std::is_floating_point_v<T>)
              r = sum;
            else
              r = saturate<T>(sum);  // integer avg taps never split: only if asked for
          } else if (ax[0].whole_taps(o0, false) * ax[1].whole_taps(o1, false) *
                         ax[2].whole_taps(o2, false) >
                     0) {
            const int64_t divisor = ax[0].whole_taps(o0, include_pad) *
                                    ax[1].whole_taps(o1, include_pad) *
                                    ax[2].whole_taps(o2, include_pad);
            if (is_max)
              r = best;
            else if constexpr (std::is_floating_point_v<T>)
              r = sum / static_cast<float>(divisor);
            else
              r = saturate<T>(div_round_half_even(sum, divisor));
          }
          store<T>(mem, out, o, r);
        });
      }
  }
};

// in [N, C, H, W], out [N, C, Ho, Wo] i32.
template <typename T>
struct PoolArgmax {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const TensorRef &x = in.operands[0], &out = in.operands[1];
    const Axes ax = window_axes(op, in);
    const int64_t base = attr(op, in, "index_base"), sn = attr(op, in, "index_stride_n"),
                  sc = attr(op, in, "index_stride_c"), sh = attr(op, in, "index_stride_h"),
                  sw = attr(op, in, "index_stride_w");
    for (int64_t n = 0; n < x.shape[0]; ++n)
      for (int64_t c = 0; c < x.shape[1]; ++c) {
        const int64_t xb = n * x.strides[0] + c * x.strides[1];
        const int64_t ob = n * out.strides[0] + c * out.strides[1];
        for_each_output(ax, ob, [&](int64_t, int64_t o1, int64_t o2, int64_t o) {
          bool found = false;
          uint32_t index = 0xffffffffu;  // -1: no input element in the window
          T best{};
          for (int64_t k1 = 0; k1 < ax[1].kernel; ++k1) {
            const int64_t h = ax[1].at(o1, k1);
            if (!ax[1].inside(h)) continue;
            for (int64_t k2 = 0; k2 < ax[2].kernel; ++k2) {
              const int64_t w = ax[2].at(o2, k2);
              if (!ax[2].inside(w)) continue;
              const T v = load<T>(mem, x, xb + h * ax[1].in_stride + w * ax[2].in_stride);
              if (!found || v > best) {
                found = true;
                best = v;
                // In u64, truncated: the i32 wrap-around.
                index = static_cast<uint32_t>(
                    static_cast<uint64_t>(base) + static_cast<uint64_t>(n) * sn +
                    static_cast<uint64_t>(c) * sc + static_cast<uint64_t>(h) * sh +
                    static_cast<uint64_t>(w) * sw);
              }
            }
          }
          store<int32_t>(mem, out, o, static_cast<int32_t>(index));
        });
      }
  }
};

// in [N, Ci, H, W], out [N, C, H, W]; the channel window is the op's one window axis.
// Integers are fixed point with frac_bits fraction bits: the squares are summed exactly (i64),
// the quotient is computed in double, rounded half to even and saturated.
template <typename T>
struct Lrn {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const TensorRef &x = in.operands[0], &out = in.operands[1];
    const Axis ch = window_axes(op, in)[kAxes - 1];
    const double alpha = real_attr(op, in, "alpha"), beta = real_attr(op, in, "beta"),
                 bias = real_attr(op, in, "bias");
    const double scale = alpha / static_cast<double>(ch.kernel);
    const double one = std::ldexp(1.0, static_cast<int>(attr(op, in, "frac_bits")));
    const int64_t centre_tap = (ch.kernel - 1) / 2;
    for (int64_t n = 0; n < out.shape[0]; ++n)
      for (int64_t c = 0; c < out.shape[1]; ++c)
        for (int64_t h = 0; h < out.shape[2]; ++h)
          for (int64_t w = 0; w < out.shape[3]; ++w) {
            const int64_t xb = n * x.strides[0] + h * x.strides[2] + w * x.strides[3];
            std::conditional_t<std::is_floating_point_v<T>, float, int64_t> sum = 0;
            for (int64_t k = 0; k < ch.kernel; ++k) {
              const int64_t ci = ch.at(c, k);
              if (!ch.inside(ci)) continue;
              const T v = load<T>(mem, x, xb + ci * ch.in_stride);
              sum = sum + static_cast<decltype(sum)>(v) * v;
            }
            const int64_t centre = ch.at(c, centre_tap);
            const double v = ch.inside(centre) ? load<T>(mem, x, xb + centre * ch.in_stride) : 0.0;
            const int64_t o =
                n * out.strides[0] + c * out.strides[1] + h * out.strides[2] + w * out.strides[3];
            if constexpr (std::is_floating_point_v<T>) {
              store<T>(mem, out, o,
                       static_cast<T>(v / std::pow(bias + scale * static_cast<double>(sum), beta)));
            } else {
              const double sum_real = static_cast<double>(sum) / (one * one);
              const double y = v / one / std::pow(bias + scale * sum_real, beta) * one;
              const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
              store<T>(mem, out, o,
                       static_cast<T>(std::isnan(y) ? 0.0 : std::clamp(std::nearbyint(y), lo, hi)));
            }
          }
  }
};

}  // namespace

void register_window(ReferenceTable& t) {
  for (const char* name : {"conv1d", "conv2d", "conv3d"}) t[name] = conv_by_dtype;
  // Pools take u8 too (pool2d's u8 row is max only).
  using PoolTypes = TypeList<float, int32_t, int16_t, int8_t, uint8_t>;
  for (const char* name : {"pool1d", "pool2d", "pool3d"})
    t[name] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
      by_dtype_in<Pool>(PoolTypes{}, in.operands[1].dtype, op.name, op, in, mem);
    };
  t["pool2d_argmax"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype_in<PoolArgmax>(PoolTypes{}, in.operands[0].dtype, op.name, op, in, mem);
  };
  t["lrn"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Lrn>(in.operands[1].dtype, op.name, op, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
