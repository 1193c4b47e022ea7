// The LFU of an inner node: the RD stage (combining the children's partial results) and the
// finalize work of an instruction (a leaf does that on its unit).
#include "isa/error.h"
#include "sim/node.h"
#include "sim/node_piece.h"

namespace fracsim::sim {

using sc_core::sc_time;

void Node::rd_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_rd_.read(p);
    holding_[kRd] = p;
    const sc_time t0 = sc_core::sc_time_stamp();
    uint64_t cycles = 0;
    for (const isa::Instruction& r : p->split.reductions) {
      const uint64_t elements = static_cast<uint64_t>(r.operands.back().elements());
      stats()[Counter::lfu_elements] += elements;
      cycles += (elements + controller_.lfu_throughput - 1) / controller_.lfu_throughput;
      if (ctx_.functional) isa::execute_reference(ctx_.ops->get(r.opcode), r, memory_->view());
    }
    wait_cycles(cycles);
    stats()[Counter::reduce_cycles] += cycles;
    holding_[kRd] = nullptr;
    trace(kRd, *p, t0);
    to_wb_.write(p);
  });
}

// Streams the operands from the parent's memory, combines them (the LFU; a leaf's unit), and
// streams the result back, one phase after the other:
//   LD-channel transfer of the inputs + ceil(elements / LFU throughput) (a leaf: the unit's
//   cycles) + WB-channel transfer of the outputs.
void Node::run_finalize(const isa::Instruction& f, const Piece& p) {
  const sc_time t0 = sc_core::sc_time_stamp();
  const isa::OpDef& op = ctx_.ops->get(f.opcode);
  uint64_t in = 0, out = 0;
  std::pair<uint64_t, uint64_t> in_span{UINT64_MAX, 0}, out_span{UINT64_MAX, 0};
  for (size_t o = 0; o < f.operands.size(); ++o) {
    const auto s = f.operands[o].byte_span();
    auto widen = [&](std::pair<uint64_t, uint64_t>& w) {
      w = {std::min(w.first, s.first), std::max(w.second, s.second)};
    };
    if (isa::operand_is_read(op, f, o)) {
      in += f.operands[o].stored_bytes();
      widen(in_span);
    }
    if (op.operands[o].role == isa::OperandRole::out) {
      out += f.operands[o].stored_bytes();
      widen(out_span);
    }
  }
  const uint64_t ld =
      dma_->transfer(DmaEngine::kRead, in, in_span.first, in_span.second, p.copies, p.route);
  stats()[Counter::load_cycles] += ld;
  stats()[Counter::load_bytes] += in;
  isa::MemoryView parent = ctx_.functional ? dma_->parent_view() : isa::MemoryView{};
  uint64_t cycles;
  if (is_leaf_) {
    cycles = unit_->run(op, f, ctx_.functional ? &parent : nullptr);
    stats()[Counter::unit_cycles] += cycles;
    if (const auto rtl = unit_->last_rtl_unit()) ++stats()[*rtl];
    stats()[op.unit == "matrix" ? Counter::matrix_ops : Counter::vector_ops] +=
        static_cast<uint64_t>(isa::instruction_work(op, f));
  } else {
    const uint64_t elements = static_cast<uint64_t>(f.operands.back().elements());
    cycles = (elements + controller_.lfu_throughput - 1) / controller_.lfu_throughput;
    stats()[Counter::lfu_elements] += elements;
    stats()[Counter::reduce_cycles] += cycles;
    if (ctx_.functional) isa::execute_reference(op, f, parent);
  }
  wait_cycles(cycles);
  const uint64_t wb =
      dma_->transfer(DmaEngine::kWrite, out, out_span.first, out_span.second, p.copies, p.route);
  stats()[Counter::writeback_cycles] += wb;
  stats()[Counter::store_bytes] += out;
  if (ctx_.trace && sc_core::sc_time_stamp() != t0) {
    const size_t track = ctx_.tree->preorder(p.tree_node);
    ctx_.trace->name_node(track, ctx_.tree->path(p.tree_node));
    ctx_.trace->record(track, kWb, &op.name, t0.value(), sc_core::sc_time_stamp().value());
  }
}

}  // namespace fracsim::sim
