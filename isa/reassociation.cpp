#include "isa/reassociation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "isa/decompose/piece.h"

namespace fracsim::isa {

int64_t terms_per_output(const OpDef& op, const Instruction& instr) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  int64_t n = 1;
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == DimKind::reduce || op.dims[d].kind == DimKind::whole) n *= ext[d];
  return n;
}

bool may_reassociate(const OpDef& op) {
  return op.reassociates || std::any_of(op.dims.begin(), op.dims.end(),
                                        [](const DimDef& d) { return d.kind == DimKind::reduce; });
}

namespace {

// The f32 (size 4) or f64 element at `at` replaced by its absolute value.
void make_absolute(uint8_t* at, uint32_t size) {
  if (size == 4) {
    float v;
    std::memcpy(&v, at, 4);
    v = std::fabs(v);
    std::memcpy(at, &v, 4);
  } else {
    double v;
    std::memcpy(&v, at, 8);
    v = std::fabs(v);
    std::memcpy(at, &v, 8);
  }
}

}  // namespace

void absolute_operands(const Instruction& instr, MemoryView mem) {
  for (const TensorRef& t : instr.operands) {
    if (t.dtype != DType::f32 && t.dtype != DType::f64) continue;
    const uint32_t es = dtype_size(t.dtype);
    const auto [begin, end] = t.byte_span();
    // A view that fills its span (dense) element by element; else by its offsets.
    if ((end - begin) / es == static_cast<uint64_t>(t.stored_elements())) {
      for (uint64_t at = begin; at < end; at += es) make_absolute(mem.data + at, es);
    } else {
      for_each_offset(t, [&](int64_t off) { make_absolute(mem.data + t.address + off * es, es); });
    }
  }
}

ElementCheck compare_elements(const TensorRef& out, MemoryView got, MemoryView want,
                              const MemoryView* magnitude, int64_t terms) {
  ElementCheck c;
  const uint32_t es = dtype_size(out.dtype);
  const bool real = out.dtype == DType::f32 || out.dtype == DType::f64;
  const double unit = std::ldexp(1.0, out.dtype == DType::f64 ? -53 : -24);
  for_each_offset(out, [&](int64_t off) {
    ++c.elements;
    const uint64_t at = out.address + off * es;
    if (std::memcmp(got.data + at, want.data + at, es) == 0) {
      ++c.bit_exact;
      ++c.within_bound;
      return;
    }
    const double g = load_element(out, off, got), w = load_element(out, off, want);
    const double diff = std::fabs(g - w);
    c.max_abs_diff = std::max(c.max_abs_diff, diff);
    if (!real || !magnitude) {
      c.max_bound_use = std::numeric_limits<double>::infinity();
      return;
    }
    const double s = std::max(std::fabs(load_element(out, off, *magnitude)), std::fabs(w));
    const double bound = 2.0 * static_cast<double>(terms) * unit * s;
    if (diff <= bound) ++c.within_bound;
    c.max_bound_use = std::max(c.max_bound_use,
                               bound > 0 ? diff / bound : std::numeric_limits<double>::infinity());
  });
  return c;
}

}  // namespace fracsim::isa
