#include "isa/reference.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "isa/error.h"

namespace fracsim::isa {
namespace {

template <typename T>
T* at(MemoryView mem, const TensorRef& t, int64_t off) {
  return reinterpret_cast<T*>(mem.data + t.address) + off;
}

template <typename T>
T load(MemoryView mem, const TensorRef& t, int64_t off) {
  T v;
  std::memcpy(&v, at<T>(mem, t, off), sizeof(T));
  return v;
}

template <typename T>
void store(MemoryView mem, const TensorRef& t, int64_t off, T v) {
  std::memcpy(at<T>(mem, t, off), &v, sizeof(T));
}

void check_inside(const TensorRef& t, MemoryView mem, const OpDef& op) {
  auto [lo, hi] = t.byte_span();
  FRACSIM_ASSERT(hi <= mem.size && lo <= hi, "{}: operand {} outside memory of {} bytes", op.name,
                 tensor_str(t), mem.size);
}

template <typename In, typename Acc>
void matmul(const Instruction& in, MemoryView mem) {
  const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
  const bool accumulate = in.attrs[0] != 0;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t o = m * out.strides[0] + n * out.strides[1];
      Acc acc = accumulate ? load<Acc>(mem, out, o) : Acc(0);
      for (int64_t k = 0; k < K; ++k) {
        In x = load<In>(mem, a, m * a.strides[0] + k * a.strides[1]);
        In y = load<In>(mem, b, k * b.strides[0] + n * b.strides[1]);
        if constexpr (std::is_floating_point_v<Acc>) {
          acc = acc + x * y;
        } else {  // wrap-around i32 accumulation
          acc = static_cast<Acc>(static_cast<uint32_t>(acc) +
                                 static_cast<uint32_t>(static_cast<int32_t>(x) * y));
        }
      }
      store<Acc>(mem, out, o, acc);
    }
}

template <typename T>
T saturate(int64_t v) {
  return static_cast<T>(std::clamp<int64_t>(v, std::numeric_limits<T>::min(),
                                            std::numeric_limits<T>::max()));
}

template <typename T>
T apply_binary(const std::string& fn, T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (fn == "add") return x + y;
    if (fn == "mul") return x * y;
    if (fn == "max") return x > y ? x : y;
  } else {
    if (fn == "add") return saturate<T>(int64_t{x} + int64_t{y});
    if (fn == "mul") return saturate<T>(int64_t{x} * int64_t{y});
    if (fn == "max") return std::max(x, y);
  }
  throw InternalError("eltwise: no reference semantics for fn " + fn);
}

template <typename T>
void eltwise(const OpDef& op, const Instruction& in, MemoryView mem) {
  const std::string& fn = op.attributes[0].values.at(in.attrs[0]);
  const TensorRef &a = in.operands[0], &b = in.operands[1], &out = in.operands[2];
  const int64_t M = out.shape[0], N = out.shape[1];
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      T x = load<T>(mem, a, m * a.strides[0] + n * a.strides[1]);
      T y = load<T>(mem, b, m * b.strides[0] + n * b.strides[1]);
      store<T>(mem, out, m * out.strides[0] + n * out.strides[1], apply_binary(fn, x, y));
    }
}

template <typename T>
void activation(const OpDef& op, const Instruction& in, MemoryView mem) {
  const std::string& fn = op.attributes[0].values.at(in.attrs[0]);
  FRACSIM_ASSERT(fn == "relu", "activation: no reference semantics for fn {}", fn);
  const TensorRef &x = in.operands[0], &out = in.operands[1];
  const int64_t M = out.shape[0], N = out.shape[1];
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      T v = load<T>(mem, x, m * x.strides[0] + n * x.strides[1]);
      store<T>(mem, out, m * out.strides[0] + n * out.strides[1], v > T(0) ? v : T(0));
    }
}

template <template <typename> class F, typename... Args>
void by_dtype(DType t, const std::string& what, Args&&... args) {
  switch (t) {
    case DType::f32: return F<float>::run(args...);
    case DType::i32: return F<int32_t>::run(args...);
    case DType::i16: return F<int16_t>::run(args...);
    case DType::i8: return F<int8_t>::run(args...);
    default: throw InternalError(fmt::format("{}: no reference semantics for {}", what, dtype_name(t)));
  }
}

template <typename T>
struct EltwiseFn {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) { eltwise<T>(op, in, mem); }
};
template <typename T>
struct ActivationFn {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    activation<T>(op, in, mem);
  }
};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <typename T>
struct FillFn {
  static void run(const DataSegment& seg, MemoryView mem) {
    uint64_t state = seg.seed;
    TensorRef t = make_tensor(seg.address, seg.dtype, {static_cast<int64_t>(seg.count)});
    for (uint64_t i = 0; i < seg.count; ++i) {
      uint64_t r = splitmix64(state);
      if constexpr (std::is_floating_point_v<T>) {
        double u = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
        store<T>(mem, t, i, static_cast<T>(seg.lo + (seg.hi - seg.lo) * u));
      } else {
        int64_t lo = static_cast<int64_t>(seg.lo), hi = static_cast<int64_t>(seg.hi);
        uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
        store<T>(mem, t, i, static_cast<T>(lo + static_cast<int64_t>(r % span)));
      }
    }
  }
};

template <typename T>
struct LoadFn {
  static void run(const TensorRef& t, int64_t off, MemoryView mem, double& out) {
    out = static_cast<double>(load<T>(mem, t, off));
  }
};

}  // namespace

void execute_reference(const OpDef& op, const Instruction& in, MemoryView mem) {
  for (const TensorRef& t : in.operands) check_inside(t, mem, op);
  if (op.name == "matmul") {
    switch (in.operands[0].dtype) {
      case DType::f32: return matmul<float, float>(in, mem);
      case DType::i8: return matmul<int8_t, int32_t>(in, mem);
      case DType::i16: return matmul<int16_t, int32_t>(in, mem);
      default: break;
    }
    throw InternalError(fmt::format("matmul: no reference semantics for {}",
                                    dtype_name(in.operands[0].dtype)));
  }
  if (op.name == "eltwise") return by_dtype<EltwiseFn>(in.operands[2].dtype, op.name, op, in, mem);
  if (op.name == "activation")
    return by_dtype<ActivationFn>(in.operands[1].dtype, op.name, op, in, mem);
  throw InternalError("no reference semantics for op " + op.name);
}

void fill_data_segment(const DataSegment& seg, MemoryView mem) {
  const uint64_t bytes = seg.count * dtype_size(seg.dtype);
  FRACSIM_ASSERT(seg.address + bytes <= mem.size, "data segment at {:#x} outside memory",
                 seg.address);
  if (seg.kind == DataSegment::Kind::bytes) {
    std::memcpy(mem.data + seg.address, seg.bytes.data(), bytes);
    return;
  }
  by_dtype<FillFn>(seg.dtype, "data segment", seg, mem);
}

std::vector<uint8_t> run_reference(const Program& p, const OpTable& ops) {
  std::vector<uint8_t> image(p.footprint, 0);
  MemoryView mem{image.data(), image.size()};
  for (const DataSegment& seg : p.data) fill_data_segment(seg, mem);
  for (const Instruction& in : p.instructions) execute_reference(ops.get(in.opcode), in, mem);
  return image;
}

double load_element(const TensorRef& t, int64_t off, MemoryView mem) {
  double v = 0;
  by_dtype<LoadFn>(t.dtype, "load", t, off, mem, v);
  return v;
}

}  // namespace fracsim::isa

namespace fracsim::isa {

void copy_tensor(const TensorRef& src, MemoryView src_mem, const TensorRef& dst,
                 MemoryView dst_mem) {
  FRACSIM_ASSERT(src.dtype == dst.dtype, "copy {} to {}", tensor_str(src), tensor_str(dst));
  auto [slo, shi] = src.byte_span();
  auto [dlo, dhi] = dst.byte_span();
  FRACSIM_ASSERT(shi <= src_mem.size && dhi <= dst_mem.size, "copy {} to {} outside memory",
                 tensor_str(src), tensor_str(dst));
  const uint32_t es = dtype_size(src.dtype);
  uint8_t* s = src_mem.data + src.address;
  uint8_t* d = dst_mem.data + dst.address;
  for_each_pair(src, dst, [&](int64_t so, int64_t doff) {
    std::memcpy(d + doff * es, s + so * es, es);
  });
}

}  // namespace fracsim::isa
