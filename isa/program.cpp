#include "isa/program.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"

namespace fracsim::isa {

std::string_view symbol_role_name(SymbolRole r) {
  switch (r) {
    case SymbolRole::input:
      return "input";
    case SymbolRole::weight:
      return "weight";
    case SymbolRole::output:
      return "output";
  }
  return "?";
}

std::map<std::string, int64_t> bind_dims(const OpDef& op, const Instruction& instr,
                                         const std::string& where) {
  auto fail = [&](const std::string& msg) {
    return ConfigError(fmt::format("{}: {}: {}", where, op.name, msg));
  };
  if (instr.operands.size() != op.operands.size())
    throw fail(
        fmt::format("expected {} operands, got {}", op.operands.size(), instr.operands.size()));
  if (instr.attrs.size() != op.attributes.size())
    throw fail(
        fmt::format("expected {} attributes, got {}", op.attributes.size(), instr.attrs.size()));
  std::map<std::string, int64_t> dims;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const OperandDef& od = op.operands[i];
    const TensorRef& t = instr.operands[i];
    if (t.rank() != static_cast<int>(od.dims.size()) || t.strides.size() != t.shape.size())
      throw fail(fmt::format("operand {} must have rank {}, got {}", od.name, od.dims.size(),
                             tensor_str(t)));
    for (size_t d = 0; d < od.dims.size(); ++d) {
      if (t.shape[d] < 0) throw fail(fmt::format("operand {} has a negative extent", od.name));
      auto [it, fresh] = dims.emplace(od.dims[d], t.shape[d]);
      if (!fresh && it->second != t.shape[d])
        throw fail(fmt::format("dim {} is {} in an earlier operand but {} in operand {}",
                               od.dims[d], it->second, t.shape[d], od.name));
    }
  }
  // Attribute values first: the dtype rows below may depend on them.
  for (size_t a = 0; a < op.attributes.size(); ++a) {
    const AttrDef& ad = op.attributes[a];
    const int64_t v = instr.attrs[a];
    if (!ad.accepts(v)) throw fail(attr_value_error(ad, v));
  }
  bool dtype_ok = false;
  const DTypeRowLimit* limited = nullptr;  // a matching row whose `only:` excludes the attrs
  for (size_t r = 0; r < op.dtypes.size(); ++r) {
    const auto& row = op.dtypes[r];
    bool match = true;
    for (size_t i = 0; i < row.size(); ++i) match = match && row[i] == instr.operands[i].dtype;
    if (!match) continue;
    const DTypeRowLimit& lim = op.dtype_limits[r];
    const int a = lim.attr.empty() ? -1 : op.attr_index(lim.attr);
    if (a >= 0 && (instr.attrs[a] < 0 ||
                   instr.attrs[a] >= static_cast<int64_t>(op.attributes[a].values.size()) ||
                   !op.row_allows(r, instr.attrs))) {
      limited = &lim;
      continue;
    }
    dtype_ok = true;
  }
  if (!dtype_ok) {
    std::string seen;
    for (const auto& t : instr.operands)
      seen += std::string(seen.empty() ? "" : ",") + std::string(dtype_name(t.dtype));
    if (limited != nullptr)
      throw fail(fmt::format("dtype combination ({}) is accepted only with {} = {}", seen,
                             limited->attr, fmt::join(limited->values, " or ")));
    throw fail(fmt::format("dtype combination ({}) is not accepted", seen));
  }
  for (size_t a = 0; a < op.attributes.size(); ++a) {
    const AttrDef& ad = op.attributes[a];
    int64_t v = instr.attrs[a];
    if (ad.type == AttrType::enumeration &&
        std::find(ad.float_only.begin(), ad.float_only.end(), ad.values[v]) != ad.float_only.end())
      for (const TensorRef& t : instr.operands)
        if (is_integer(t.dtype))
          throw fail(fmt::format("{} {} is defined for f32 operands only", ad.name, ad.values[v]));
    dims[ad.name] = v;
  }
  // A dim no operand holds (a pool's taps) has its extent in an attribute.
  for (const DimDef& d : op.dims)
    if (!d.extent_attr.empty()) {
      const int64_t e = dims.at(d.extent_attr);
      if (e < 0) throw fail(fmt::format("dim {} ({}) is negative", d.name, d.extent_attr));
      dims[d.name] = e;
    }
  // Each window's output extent must be what its input extent, kernel, stride, dilation and
  // pads give: O = (W + pad_begin + pad_end - ((K - 1) * dilation + 1)) / stride + 1.
  for (const DimDef& d : op.dims) {
    if (d.kind != DimKind::window) continue;
    const WindowDef& w = d.window;
    auto term = [&](const WindowTerm& t) { return t.name.empty() ? t.value : dims.at(t.name); };
    const int64_t K = term(w.kernel), st = term(w.stride), dil = term(w.dilation);
    const int64_t pb = dims.at(w.pad_begin), pe = dims.at(w.pad_end);
    const int64_t W = dims.at(d.name), O = dims.at(w.of);
    if (K < 1 || st < 1 || dil < 1)
      throw fail(fmt::format("window {}: kernel {}, stride {} and dilation {} must be at least 1",
                             d.name, K, st, dil));
    int64_t span = 0;
    if (__builtin_mul_overflow(K - 1, dil, &span) || __builtin_add_overflow(span, 1, &span))
      throw fail(fmt::format("window {}: kernel {} dilated by {} spans more than 2^63 elements",
                             d.name, K, dil));
    // A piece of a kernel's taps may have pads wider than its own taps span, and when its
    // taps fall wholly in the padding (an empty input) one pad may be negative.
    int64_t padded = 0;
    if (__builtin_add_overflow(W, pb, &padded) || __builtin_add_overflow(padded, pe, &padded))
      throw fail(fmt::format("window {}: {} = {} with pads {}+{} exceeds 2^63 elements", d.name,
                             d.name, W, pb, pe));
    if ((W > 0 && (pb < 0 || pe < 0)) || padded < W)
      throw fail(fmt::format("window {}: pads {} and {} must not be negative", d.name, pb, pe));
    const int64_t expect = padded >= span ? (padded - span) / st + 1 : 0;
    if (O != expect)
      throw fail(
          fmt::format("window {}: {} = {} with pads {}+{}, kernel {}, stride {}, dilation "
                      "{} gives {} = {}, not {}",
                      d.name, d.name, W, pb, pe, K, st, dil, w.of, expect, O));
  }
  return dims;
}

void bind_vars(const OpDef& op, const Instruction& instr, Vars& vars) {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const std::vector<int>& ids = op.operands[i].dim_ids;
    for (size_t d = 0; d < ids.size(); ++d)
      vars.set(op.dims[ids[d]].var, instr.operands[i].shape[d]);
  }
  for (size_t a = 0; a < op.attributes.size(); ++a) vars.set(op.attributes[a].var, instr.attrs[a]);
  for (const DimDef& d : op.dims)
    if (d.extent_attr_index >= 0) vars.set(d.var, instr.attrs[d.extent_attr_index]);
}

std::string instruction_str(const OpDef& op, const Instruction& instr) {
  std::string s = op.name;
  for (size_t k = 0; k < instr.operands.size() && k < op.operands.size(); ++k)
    s += fmt::format(" {}={}", op.operands[k].name, tensor_str(instr.operands[k]));
  for (size_t a = 0; a < instr.attrs.size() && a < op.attributes.size(); ++a)
    s += fmt::format(" {}={}", op.attributes[a].name,
                     op.attr_value_str(static_cast<int>(a), instr.attrs[a]));
  return s;
}

int64_t instruction_work(const OpDef& op, const Instruction& instr) {
  return op.work.eval(bind_dims(op, instr, "work"));
}

std::string instruction_name(const Program& p, size_t i) {
  if (i < p.instruction_names.size() && !p.instruction_names[i].empty())
    return p.instruction_names[i];
  return fmt::format("#{}", i);
}

namespace {

// Whether every byte offset of `t` ((extent - 1) * stride summed, plus the address) fits 64
// bits, so that byte_span() cannot wrap around (strides are checked non-negative first).
bool fits_64_bits(const TensorRef& t) {
  uint64_t reach = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] <= 0) return true;  // an empty tensor spans no bytes
    uint64_t r = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1),
                               static_cast<uint64_t>(t.strides[d]), &r) ||
        __builtin_add_overflow(reach, r, &reach))
      return false;
  }
  uint64_t bytes = 0;
  return !__builtin_add_overflow(reach, uint64_t{1}, &reach) &&
         !__builtin_mul_overflow(reach, uint64_t{dtype_size(t.dtype)}, &bytes) &&
         !__builtin_add_overflow(bytes, t.address, &bytes);
}

// Whether the reach in elements (sum of (extent - 1) * stride, strides not negative) fits
// int64_t, in which TensorRef::byte_span and the decomposition compute it.
bool reach_fits(const TensorRef& t) {
  int64_t reach = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] <= 0) return true;  // an empty tensor
    int64_t r = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &r) ||
        __builtin_add_overflow(reach, r, &reach))
      return false;
  }
  return true;
}

// Whether the element count (the product of the extents, broadcast ones included) fits int64_t.
bool count_fits(const TensorRef& t) {
  int64_t n = 1;
  for (int64_t d : t.shape)
    if (d <= 0) return true;  // an empty tensor
  for (int64_t d : t.shape)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  return true;
}

// The byte offsets of every element of `t`, sorted.
std::vector<uint64_t> element_bytes(const TensorRef& t) {
  std::vector<uint64_t> out;
  const uint64_t es = dtype_size(t.dtype);
  for_each_offset(t, [&](int64_t off) { out.push_back(t.address + off * es); });
  std::sort(out.begin(), out.end());
  return out;
}

// An output may be the very view an input is (in place), or share no byte with it: any other
// overlap makes the result depend on the order the machine computes the pieces in. Views
// whose byte spans meet are compared element by element (interleaved views share a span
// without sharing a byte); views of more than kMaxCompared elements are not compared.
void check_overlaps(const OpDef& op, const Instruction& in, const std::string& where) {
  constexpr int64_t kMaxCompared = int64_t{1} << 22;
  for (size_t o = 0; o < in.operands.size(); ++o) {
    if (op.operands[o].role != OperandRole::out) continue;
    const TensorRef& out = in.operands[o];
    const auto [olo, ohi] = out.byte_span();
    for (size_t k = 0; k < in.operands.size(); ++k) {
      if (k == o) continue;
      const TensorRef& other = in.operands[k];
      const auto [lo, hi] = other.byte_span();
      if (lo >= ohi || olo >= hi || olo == ohi || lo == hi) continue;
      if (op.operands[k].role == OperandRole::in && other.address == out.address &&
          other.dtype == out.dtype && other.shape == out.shape && other.strides == out.strides)
        continue;
      if (out.elements() > kMaxCompared || other.elements() > kMaxCompared) continue;
      const std::vector<uint64_t> a = element_bytes(out), b = element_bytes(other);
      const uint64_t es = dtype_size(out.dtype), eb = dtype_size(other.dtype);
      // Two element lists overlap when some [x, x + es) meets some [y, y + eb).
      bool meets = false;
      for (size_t i = 0, j = 0; i < a.size() && j < b.size() && !meets;) {
        if (a[i] + es <= b[j])
          ++i;
        else if (b[j] + eb <= a[i])
          ++j;
        else
          meets = true;
      }
      if (meets)
        throw ConfigError(fmt::format(
            "{}: output {} overlaps {} {} without being the same view (bytes [{:#x}, {:#x}) and "
            "[{:#x}, {:#x})); an output may only alias an input exactly",
            where, op.operands[o].name,
            op.operands[k].role == OperandRole::out ? "output" : "input", op.operands[k].name,
            olo, ohi, lo, hi));
    }
  }
}

}  // namespace

void default_appended_attributes(Program& p, const OpTable& ops) {
  for (Instruction& in : p.instructions)
    if (const OpDef* op = ops.find(in.opcode))
      for (size_t a = in.attrs.size(); a < op->attributes.size(); ++a)
        in.attrs.push_back(op->attributes[a].default_value);
}

void validate_program(const Program& p, const OpTable& ops, const std::string& source) {
  if (!p.instruction_names.empty() && p.instruction_names.size() != p.instructions.size())
    throw ConfigError(fmt::format("{}: {} instruction names for {} instructions", source,
                                  p.instruction_names.size(), p.instructions.size()));
  auto check_span = [&](const TensorRef& t, const std::string& what) {
    for (int64_t e : t.shape)
      if (e < 0)
        throw ConfigError(
            fmt::format("{}: {}: negative extent {} in {}", source, what, e, shape_str(t.shape)));
    for (size_t d = 0; d < t.strides.size(); ++d)
      if (t.strides[d] < 0)
        throw ConfigError(fmt::format("{}: {}: negative strides are not supported", source, what));
    if (!fits_64_bits(t))
      throw ConfigError(fmt::format(
          "{}: {}: extents {} and strides {} reach past 2^64 bytes", source, what,
          fmt::join(t.shape, ","), fmt::join(t.strides, ",")));
    if (!reach_fits(t))
      throw ConfigError(fmt::format("{}: {}: extents {} and strides {} reach past 2^63 elements",
                                    source, what, fmt::join(t.shape, ","),
                                    fmt::join(t.strides, ",")));
    if (!count_fits(t))
      throw ConfigError(fmt::format("{}: {}: extents {} hold more than 2^63 elements", source, what,
                                    fmt::join(t.shape, ",")));
    auto [lo, hi] = t.byte_span();
    if (hi > p.footprint)
      throw ConfigError(
          fmt::format("{}: {}: bytes [{:#x}, {:#x}) lie outside the program's "
                      "footprint of {} bytes",
                      source, what, lo, hi, p.footprint));
  };
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    const OpDef* op = ops.find(in.opcode);
    if (!op)
      throw ConfigError(
          fmt::format("{}: instruction {}: unknown opcode {:#x}", source, i, in.opcode));
    bind_dims(*op, in, fmt::format("{}: instruction {}", source, i));
    for (size_t k = 0; k < in.operands.size(); ++k)
      check_span(in.operands[k],
                 fmt::format("instruction {} ({}) operand {}", i, op->name, op->operands[k].name));
    check_overlaps(*op, in, fmt::format("{}: instruction {} ({})", source, i, op->name));
  }
  for (const DataSegment& d : p.data) {
    TensorRef t = make_tensor(d.address, d.dtype, {static_cast<int64_t>(d.count)});
    check_span(t, fmt::format("data segment at {:#x}", d.address));
    if (d.kind == DataSegment::Kind::bytes && d.bytes.size() != d.count * dtype_size(d.dtype))
      throw ConfigError(fmt::format("{}: data segment at {:#x}: {} bytes for {} elements of {}",
                                    source, d.address, d.bytes.size(), d.count,
                                    dtype_name(d.dtype)));
  }
  for (size_t k = 0; k < p.symbols.size(); ++k) {
    const Symbol& s = p.symbols[k];
    check_span(s.tensor, "symbol " + s.name);
    for (size_t j = 0; j < k; ++j)
      if (p.symbols[j].name == s.name)
        throw ConfigError(fmt::format("{}: symbol '{}' is declared twice", source, s.name));
  }
}

}  // namespace fracsim::isa
