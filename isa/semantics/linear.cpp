// Reference semantics of the linear-algebra ops: matmul (batched) and distance (squared
// Euclidean distances between two batched point sets).
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

// out[b,m,n] = (accumulate ? out[b,m,n] : 0) + sum over k = 0..K-1, in order, of a[b,m,k]*b[b,k,n].
// f32: one f32 accumulator, no fused multiply-add. i8/i16: i32 accumulator, wrap-around.
template <typename In, typename Acc>
void matmul(const Instruction& in, MemoryView mem) {
  const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
  const bool accumulate = in.attrs[0] != 0;
  const int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = b.shape[2];
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t o = bb * out.strides[0] + m * out.strides[1] + n * out.strides[2];
        Acc acc = accumulate ? load<Acc>(mem, out, o) : Acc(0);
        const int64_t ao = bb * a.strides[0] + m * a.strides[1];
        const int64_t bo = bb * b.strides[0] + n * b.strides[2];
        for (int64_t k = 0; k < K; ++k) {
          In x = load<In>(mem, a, ao + k * a.strides[2]);
          In y = load<In>(mem, b, bo + k * b.strides[1]);
          if constexpr (std::is_floating_point_v<Acc>) {
            acc = acc + x * y;
          } else {
            acc = static_cast<Acc>(static_cast<uint32_t>(acc) +
                                   static_cast<uint32_t>(static_cast<int32_t>(x) * y));
          }
        }
        store<Acc>(mem, out, o, acc);
      }
}

// out[b,m,n] = (accumulate ? out[b,m,n] : 0) + sum over k = 0..K-1, in order, of d*d with
// d = a[b,m,k] - b[b,n,k]. f32: d rounded to f32, then acc = acc + d*d, no fused multiply-add.
// i8/i16: d and d*d are exact in i32 arithmetic modulo 2^32 (an i16 difference squared can pass
// 2^31), accumulated with wrap-around like matmul.
template <typename In, typename Acc>
void distance(const Instruction& in, MemoryView mem) {
  const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
  const bool accumulate = in.attrs[0] != 0;
  const int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = b.shape[1];
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t o = bb * out.strides[0] + m * out.strides[1] + n * out.strides[2];
        Acc acc = accumulate ? load<Acc>(mem, out, o) : Acc(0);
        const int64_t ao = bb * a.strides[0] + m * a.strides[1];
        const int64_t bo = bb * b.strides[0] + n * b.strides[1];
        for (int64_t k = 0; k < K; ++k) {
          In x = load<In>(mem, a, ao + k * a.strides[2]);
          In y = load<In>(mem, b, bo + k * b.strides[2]);
          if constexpr (std::is_floating_point_v<Acc>) {
            const Acc d = x - y;
            acc = acc + d * d;
          } else {
            const auto d = static_cast<uint32_t>(static_cast<int32_t>(x) - static_cast<int32_t>(y));
            acc = static_cast<Acc>(static_cast<uint32_t>(acc) + d * d);
          }
        }
        store<Acc>(mem, out, o, acc);
      }
}

}  // namespace

void register_linear(ReferenceTable& t) {
  t["matmul"] = [](const OpDef&, const Instruction& in, MemoryView mem) {
    switch (in.operands[0].dtype) {
      case DType::f32:
        return matmul<float, float>(in, mem);
      case DType::i8:
        return matmul<int8_t, int32_t>(in, mem);
      case DType::i16:
        return matmul<int16_t, int32_t>(in, mem);
      default:
        break;
    }
    throw InternalError(
        fmt::format("matmul: no reference semantics for {}", dtype_name(in.operands[0].dtype)));
  };
  t["distance"] = [](const OpDef&, const Instruction& in, MemoryView mem) {
    switch (in.operands[0].dtype) {
      case DType::f32:
        return distance<float, float>(in, mem);
      case DType::i8:
        return distance<int8_t, int32_t>(in, mem);
      case DType::i16:
        return distance<int16_t, int32_t>(in, mem);
      default:
        break;
    }
    throw InternalError(
        fmt::format("distance: no reference semantics for {}", dtype_name(in.operands[0].dtype)));
  };
}

}  // namespace fracsim::isa::semantics
