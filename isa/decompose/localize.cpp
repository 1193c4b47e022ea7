#include "isa/decompose/localize.h"

#include "isa/extension.h"

namespace fracsim::isa {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool operand_is_read(const OpDef& op, const Instruction& instr, size_t o) {
  const OperandDef& od = op.operands[o];
  if (od.read_if.empty()) return od.role == OperandRole::in;
  return instr.attrs[od.read_if_index] != 0;
}

LocalPiece localize(const OpDef& op, const Instruction& piece, uint64_t base) {
  LocalPiece lp;
  lp.local = piece;
  uint64_t at = base;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const TensorRef& parent = piece.operands[o];
    TensorRef local = parent.packed_at(at);
    at = align_up(at + local.stored_bytes(), kTileAlign);
    lp.local.operands[o] = local;
    if (operand_is_read(op, piece, o)) lp.loads.push_back({parent, local});
    if (op.operands[o].role == OperandRole::out) lp.stores.push_back({parent, local});
  }
  // An extension op's temporaries need room beside the tiles (where its leaf runs the sequence).
  at += temporaries_bytes(op, piece);
  lp.bytes = at - base;
  return lp;
}

}  // namespace fracsim::isa
