#include "isa/decompose/piece.h"

#include <algorithm>

#include "isa/error.h"

namespace fracsim::isa {

std::vector<int64_t> dim_extents(const OpDef& op, const Instruction& instr) {
  std::vector<int64_t> ext(op.dims.size(), 0);
  for (size_t o = 0; o < op.operands.size(); ++o)
    for (size_t a = 0; a < op.operands[o].dims.size(); ++a)
      ext[op.operands[o].dim_ids[a]] = instr.operands[o].shape[a];
  for (size_t d = 0; d < op.dims.size(); ++d)
    if (op.dims[d].extent_attr_index >= 0) ext[d] = instr.attrs[op.dims[d].extent_attr_index];
  return ext;
}

int64_t window_term(const WindowTerm& t, const std::vector<int64_t>& ext,
                    const Instruction& instr) {
  if (t.name.empty()) return t.value;
  return t.dim >= 0 ? ext[t.dim] : instr.attrs[t.attr];
}

namespace {

// A window dim's input frame (its `offset` and `after` attributes: the whole input's elements
// before and after the operand's) tells which taps of a window read the whole input rather than
// its padding, for the taps beyond the operand's view (isa/semantics/window.cpp, whole_taps).
// Beyond the farthest row a window's taps reach, more frame changes nothing: each side is cut to
// that reach, so that pieces alike but for where they lie in the whole have one key (congruence,
// the cost model's caches). A piece sliced from a cut instruction reaches no farther than its
// parent did, so its frame is cut alike.
void clamp_input_frame(const OpDef& op, Instruction& instr) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  for (size_t d = 0; d < op.dims.size(); ++d) {
    const DimDef& dd = op.dims[d];
    if (dd.kind != DimKind::window || dd.offset_index < 0 || dd.after_index < 0) continue;
    const WindowDef& w = dd.window;
    const int64_t out = ext[w.of_index];
    if (out == 0) continue;
    auto term = [&](const WindowTerm& t) { return window_term(t, ext, instr); };
    const int kd = w.kernel.dim;
    const int64_t K = kd >= 0 ? ext[kd] : term(w.kernel);
    // A piece of the kernel's taps: its whole windows' taps before and after its own.
    const DimDef* k = kd >= 0 ? &op.dims[kd] : nullptr;
    const int64_t tap_before = k && k->offset_index >= 0 ? instr.attrs[k->offset_index] : 0;
    const int64_t tap_after = k && k->after_index >= 0 ? instr.attrs[k->after_index] : 0;
    const int64_t st = term(w.stride), dil = term(w.dilation), pad = instr.attrs[w.pad_begin_index];
    // The whole windows' taps read rows first..last of the operand (isa/semantics/window.cpp).
    const int64_t first = -pad - tap_before * dil;
    const int64_t last = (out - 1) * st - pad + (K + tap_after - 1) * dil;
    int64_t& before = instr.attrs[dd.offset_index];
    int64_t& after = instr.attrs[dd.after_index];
    before = std::min(before, std::max<int64_t>(0, -first));
    after = std::min(after, std::max<int64_t>(0, last - ext[d] + 1));
  }
}

}  // namespace

Instruction slice_instruction(const OpDef& op, const Instruction& instr, const PieceRange& range) {
  Instruction out = instr;
  PieceRange r = range;
  // A window dim follows its output dim: the input rows the piece's windows touch, and the pads
  // that remain at the piece's edges.
  const std::vector<int64_t> ext = dim_extents(op, instr);
  for (size_t d = 0; d < op.dims.size(); ++d) {
    if (op.dims[d].kind != DimKind::window) continue;
    const WindowDef& w = op.dims[d].window;
    auto term = [&](const WindowTerm& t) { return window_term(t, ext, instr); };
    // The piece's taps: a range of the kernel dim, or the whole kernel.
    const int kd = w.kernel.dim;
    const int64_t t0 = kd >= 0 ? r.begin[kd] : 0;
    const int64_t K = kd >= 0 ? r.len[kd] : term(w.kernel);
    const int64_t st = term(w.stride), dil = term(w.dilation);
    const int pb_attr = w.pad_begin_index, pe_attr = w.pad_end_index;
    const int of = w.of_index;
    const int64_t b = r.begin[of], l = r.len[of];
    if (l == 0) {
      r.begin[d] = 0;
      r.len[d] = 0;
      continue;
    }
    // Output b, tap t0 reads input row b*stride - pad_begin + t0*dilation. When the piece's taps
    // all fall in the padding its input is empty, at row 0, and one pad may be negative (the
    // pads still place its windows where the whole op has them; bind_dims).
    const int64_t start = b * st - instr.attrs[pb_attr] + t0 * dil;
    const int64_t end = (b + l - 1) * st - instr.attrs[pb_attr] + (t0 + K - 1) * dil + 1;
    int64_t ib = std::clamp<int64_t>(start, 0, ext[d]);
    int64_t ie = std::clamp<int64_t>(end, ib, ext[d]);
    if (ie == ib) ib = ie = 0;  // no input row: the operand keeps its place, rows their index
    r.begin[d] = ib;
    r.len[d] = ie - ib;
    out.attrs[pb_attr] = ib - start;
    out.attrs[pe_attr] = end - ie;
  }
  for (size_t o = 0; o < op.operands.size(); ++o)
    for (size_t a = 0; a < op.operands[o].dims.size(); ++a) {
      const int d = op.operands[o].dim_ids[a];
      out.operands[o].narrow(static_cast<int>(a), r.begin[d], r.len[d]);
    }
  for (size_t d = 0; d < op.dims.size(); ++d) {
    const DimDef& dd = op.dims[d];
    if (dd.kind == DimKind::reduce && dd.accumulate_index >= 0 && r.begin[d] > 0)
      out.attrs[dd.accumulate_index] = 1;
    if (dd.kind == DimKind::reduce && dd.final_index >= 0 && r.begin[d] + r.len[d] < ext[d])
      out.attrs[dd.final_index] = 0;
    if (dd.offset_index >= 0) {
      const int64_t scale = dd.offset_scale_index < 0 ? 1 : instr.attrs[dd.offset_scale_index];
      out.attrs[dd.offset_index] += r.begin[d] * scale;
    }
    if (dd.after_index >= 0) out.attrs[dd.after_index] += ext[d] - r.begin[d] - r.len[d];
    if (dd.extent_attr_index >= 0) out.attrs[dd.extent_attr_index] = r.len[d];
  }
  clamp_input_frame(op, out);
  return out;
}

void balanced_chunks(int64_t extent, int64_t parts, std::vector<int64_t>& begin,
                     std::vector<int64_t>& len) {
  FRACSIM_ASSERT(parts >= 1 && parts <= std::max<int64_t>(extent, 1), "{} parts of {}", parts,
                 extent);
  begin.clear();
  len.clear();
  int64_t pos = 0;
  for (int64_t p = 0; p < parts; ++p) {
    int64_t l = extent / parts + (p < extent % parts ? 1 : 0);
    begin.push_back(pos);
    len.push_back(l);
    pos += l;
  }
}

}  // namespace fracsim::isa
