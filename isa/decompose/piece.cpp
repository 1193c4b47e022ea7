#include "isa/decompose/piece.h"

#include "isa/error.h"

namespace fracsim::isa {

std::vector<int64_t> dim_extents(const OpDef& op, const Instruction& instr) {
  std::vector<int64_t> ext(op.dims.size(), 0);
  for (size_t o = 0; o < op.operands.size(); ++o)
    for (size_t a = 0; a < op.operands[o].dims.size(); ++a)
      ext[op.dim_index(op.operands[o].dims[a])] = instr.operands[o].shape[a];
  return ext;
}

Instruction slice_instruction(const OpDef& op, const Instruction& instr, const PieceRange& r) {
  Instruction out = instr;
  for (size_t o = 0; o < op.operands.size(); ++o)
    for (size_t a = 0; a < op.operands[o].dims.size(); ++a) {
      int d = op.dim_index(op.operands[o].dims[a]);
      out.operands[o] = out.operands[o].slice(static_cast<int>(a), r.begin[d], r.len[d]);
    }
  for (size_t d = 0; d < op.dims.size(); ++d) {
    const DimDef& dd = op.dims[d];
    if (dd.kind == DimKind::reduce && !dd.accumulate_attr.empty() && r.begin[d] > 0)
      out.attrs[op.attr_index(dd.accumulate_attr)] = 1;
  }
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
