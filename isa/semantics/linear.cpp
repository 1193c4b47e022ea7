// Reference semantics of the linear-algebra ops: matmul (batched) and distance (squared
// Euclidean distances between two batched point sets). Both reduce over K in index order into
// one accumulator per output, from 0 or, with accumulate, from out's old value; they differ
// only in the term a pair of elements adds and in where K lies in b.
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

// distance: d * d with d = x - y. f32: d rounded to f32, then acc + d*d, no fused multiply-add.
// i8/i16: d and d*d modulo 2^32 (an i16 difference squared can pass 2^31), wrapping like matmul.
template <typename In, typename Acc>
Acc squared_difference_term(Acc acc, In x, In y) {
  if constexpr (std::is_floating_point_v<Acc>) {
    const Acc d = x - y;
    return acc + d * d;
  } else {
    const auto d = static_cast<uint32_t>(static_cast<int32_t>(x) - static_cast<int32_t>(y));
    return static_cast<Acc>(static_cast<uint32_t>(acc) + d * d);
  }
}

// out[b,m,n] = fold over k = 0..K-1 of Term(acc, a[b,m,k], b[b,.,.]), where b's K axis is
// `b_k` and its N axis `b_n` (matmul: b[B,K,N]; distance: b[B,N,K]).
template <typename In, typename Acc, Acc (*Term)(Acc, In, In)>
void contract(const Instruction& in, MemoryView mem, int b_k, int b_n) {
  const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
  const bool accumulate = in.attrs[0] != 0;
  const int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = b.shape[b_n];
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t o = bb * out.strides[0] + m * out.strides[1] + n * out.strides[2];
        Acc acc = accumulate ? load<Acc>(mem, out, o) : Acc(0);
        const int64_t ao = bb * a.strides[0] + m * a.strides[1];
        const int64_t bo = bb * b.strides[0] + n * b.strides[b_n];
        for (int64_t k = 0; k < K; ++k)
          acc = Term(acc, load<In>(mem, a, ao + k * a.strides[2]),
                     load<In>(mem, b, bo + k * b.strides[b_k]));
        store<Acc>(mem, out, o, acc);
      }
}

template <template <typename, typename> class Op>
void by_input_dtype(const std::string& name, const Instruction& in, MemoryView mem) {
  switch (in.operands[0].dtype) {
    case DType::f32:
      return Op<float, float>::run(in, mem);
    case DType::i8:
      return Op<int8_t, int32_t>::run(in, mem);
    case DType::i16:
      return Op<int16_t, int32_t>::run(in, mem);
    default:
      break;
  }
  throw InternalError(
      fmt::format("{}: no reference semantics for {}", name, dtype_name(in.operands[0].dtype)));
}

template <typename In, typename Acc>
struct Matmul {
  static void run(const Instruction& in, MemoryView mem) {
    contract<In, Acc, product_term<In, Acc>>(in, mem, /*b_k=*/1, /*b_n=*/2);
  }
};

template <typename In, typename Acc>
struct Distance {
  static void run(const Instruction& in, MemoryView mem) {
    contract<In, Acc, squared_difference_term<In, Acc>>(in, mem, /*b_k=*/2, /*b_n=*/1);
  }
};

}  // namespace

void register_linear(ReferenceTable& t) {
  t["matmul"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_input_dtype<Matmul>(op.name, in, mem);
  };
  t["distance"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_input_dtype<Distance>(op.name, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
