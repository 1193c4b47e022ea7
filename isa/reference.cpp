#include "isa/reference.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "isa/error.h"
#include "isa/extension.h"
#include "isa/semantics/semantics.h"

namespace fracsim::isa {

namespace semantics {
int64_t div_round_half_even(int64_t num, int64_t den) {
  FRACSIM_ASSERT(den != 0, "division by zero");
  if (den < 0) {
    num = -num;
    den = -den;
  }
  int64_t q = num / den, r = num % den;
  if (r < 0) {
    --q;
    r += den;
  }
  if (2 * r > den || (2 * r == den && (q & 1))) ++q;
  return q;
}
}  // namespace semantics

namespace {
using semantics::by_dtype;
using semantics::load;
using semantics::store;

void check_inside(const TensorRef& t, MemoryView mem, const OpDef& op) {
  auto [lo, hi] = t.byte_span();
  FRACSIM_ASSERT(hi <= mem.size && lo <= hi, "{}: operand {} outside memory of {} bytes", op.name,
                 tensor_str(t), mem.size);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The two's-complement bits of the integer T nearest to v inside T's range (v truncated toward
// zero, NaN as 0), so that a random segment's bounds never leave the dtype.
template <typename T>
uint64_t clamped_bits(double v) {
  using L = std::numeric_limits<T>;
  if (std::isnan(v)) v = 0;
  if (v >= static_cast<double>(L::max())) return static_cast<uint64_t>(L::max());
  if (v <= static_cast<double>(L::min()))
    return static_cast<uint64_t>(static_cast<int64_t>(L::min()));
  if constexpr (std::is_unsigned_v<T>)
    return static_cast<uint64_t>(v);
  else
    return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// Random segments: splitmix64 per element. Floats: lo + (hi - lo) * u, u uniform in [0, 1) with
// 53 bits, computed in double and rounded once to the dtype (f16 half to even). Integers:
// uniform in [lo, hi] (the bounds truncated toward zero and clamped to the dtype's range), as
// lo + r mod (hi - lo + 1) in 64-bit two's complement.
template <typename T>
struct FillFn {
  static void run(const DataSegment& seg, MemoryView mem) {
    uint64_t state = seg.seed;
    TensorRef t = make_tensor(seg.address, seg.dtype, {static_cast<int64_t>(seg.count)});
    if constexpr (std::is_integral_v<T>) {
      const uint64_t lo = clamped_bits<T>(seg.lo);
      const uint64_t span = clamped_bits<T>(seg.hi) - lo + 1;  // 0: the whole 64-bit range
      for (uint64_t i = 0; i < seg.count; ++i) {
        const uint64_t r = splitmix64(state);
        store<T>(mem, t, i, static_cast<T>(lo + (span == 0 ? r : r % span)));
      }
    } else {
      for (uint64_t i = 0; i < seg.count; ++i) {
        const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
        const double v = seg.lo + (seg.hi - seg.lo) * u;
        if constexpr (std::is_same_v<T, semantics::Half>)
          store<T>(mem, t, i, semantics::Half{half_from_double(v)});
        else
          store<T>(mem, t, i, static_cast<T>(v));
      }
    }
  }
};

template <typename T>
struct LoadFn {
  static void run(const TensorRef& t, int64_t off, MemoryView mem, double& out) {
    out = semantics::to_double(load<T>(mem, t, off));
  }
};

const semantics::ReferenceTable& reference_table() {
  static const semantics::ReferenceTable table = [] {
    semantics::ReferenceTable t;
    semantics::register_linear(t);
    semantics::register_elementwise(t);
    semantics::register_window(t);
    semantics::register_reduction(t);
    semantics::register_ordering(t);
    semantics::register_conversion(t);
    return t;
  }();
  return table;
}

}  // namespace

bool has_reference(const std::string& op) {
  // Extension ops run their sequence of primitives.
  const OpDef* def = OpTable::builtin().find(op);
  return reference_table().count(op) > 0 || (def != nullptr && def->is_extension());
}

void execute_reference(const OpDef& op, const Instruction& in, MemoryView mem) {
  for (const TensorRef& t : in.operands) check_inside(t, mem, op);
  if (op.is_extension()) return execute_extension(op, in, mem);
  auto it = reference_table().find(op.name);
  if (it == reference_table().end())
    throw InternalError("no reference semantics for op " + op.name);
  it->second(op, in, mem);
}

void fill_data_segment(const DataSegment& seg, MemoryView mem) {
  const uint64_t bytes = seg.count * dtype_size(seg.dtype);
  FRACSIM_ASSERT(seg.address + bytes <= mem.size, "data segment at {:#x} outside memory",
                 seg.address);
  if (seg.kind == DataSegment::Kind::bytes) {
    std::memcpy(mem.data + seg.address, seg.bytes.data(), bytes);
    return;
  }
  semantics::by_dtype_in<FillFn>(semantics::AllTypes{}, seg.dtype, "data segment", seg, mem);
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
  semantics::by_dtype_in<LoadFn>(semantics::AllTypes{}, t.dtype, "load", t, off, mem, v);
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
  for_each_pair(src, dst,
                [&](int64_t so, int64_t doff) { std::memcpy(d + doff * es, s + so * es, es); });
}

}  // namespace fracsim::isa
