// The LFU of an inner node: the RD stage (combining the children's partial results) and the
// finalize work of an instruction (a leaf does that on its unit).
#include <algorithm>

#include "isa/error.h"
#include "sim/node.h"
#include "sim/node_piece.h"

namespace fracsim::sim {

void Node::rd_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    Pipeline::Stage& st = q.stages[kRd];
    enum { kTake, kChildren, kReduce, kDone, kPass };
    while (true) switch (st.step) {
        case kTake:
          if (!q.to_rd.take(st.piece)) return;
          st.step = !is_leaf_ && ctx_.spec->levels[level_ + 1].overlap ? kChildren : kReduce;
          break;
        case kChildren: {
          // The children overlap (LevelSpec::overlap): EX issued the piece's instructions and
          // went on; its EX time is the children's, from issue to the last one's end.
          const Dispatch& d = *q.dispatches.front();
          FRACSIM_ASSERT(d.piece == st.piece, "{}: dispatches out of order", name());
          if (d.children.remaining > 0) {
            sc_core::next_trigger(d.children.done);
            return;
          }
          const uint64_t ps = (d.children.finished - d.start).value();
          count(*st.piece, Counter::execute_cycles, (ps + period_ps_ - 1) / period_ps_);
          trace(kEx, *st.piece, d.start, d.children.finished);
          dispatch_end(*st.piece);
          st.step = kReduce;
          break;
        }
        case kReduce: {
          const Piece* p = st.piece;
          st.t0 = sc_core::sc_time_stamp();
          uint64_t cycles = 0;
          for (const isa::Instruction& r : p->split.reductions) {
            const uint64_t elements = static_cast<uint64_t>(r.operands.back().elements());
            count(*p, Counter::lfu_elements, elements);
            cycles += isa::lfu_cycles(r, controller_.lfu_throughput);
            if (ctx_.functional)
              isa::execute_reference(ctx_.ops->get(r.opcode), r, memory_->view());
            // The children's tables may hold what this overwrites (a kept output).
            const isa::OpDef& rop = ctx_.ops->get(r.opcode);
            for (size_t o = 0; o < rop.operands.size(); ++o)
              if (rop.operands[o].role == isa::OperandRole::out) {
                const auto out = r.operands[o].byte_span();
                invalidate_children(out.first, out.second);
              }
          }
          count(*p, Counter::reduce_cycles, cycles);
          st.step = kDone;
          if (wait_cycles(cycles)) return;
          break;
        }
        case kDone:
          st.piece->reduced = true;
          st.piece->reduced_ps = sc_core::sc_time_stamp().value();
          pipe_->reduced.notify(sc_core::SC_ZERO_TIME);
          if (Settle* s = st.piece->settle.get()) {
            s->computed = true;
            s->computed_ps = st.piece->reduced_ps;
            s->computed_event.notify(sc_core::SC_ZERO_TIME);
          }
          trace(kRd, *st.piece, st.t0);
          st.step = kPass;
          break;
        case kPass:
          if (!st.pass_to(q.to_wb)) return;
          break;
      }
  });
}

// Streams the operands from the parent's memory, combines them (the LFU; a leaf's unit), and
// streams the result back, one phase after the other:
//   LD-channel transfer of the inputs + ceil(elements / LFU throughput) (a leaf: the unit's
//   cycles) + WB-channel transfer of the outputs.
bool Node::finalize_step(Piece& p) {
  Pipeline& q = *pipe_;
  enum { kLoad, kCompute, kStore, kStored };
  while (true) {
    if (q.finalize == p.finalize.size()) return true;
    const isa::Instruction& f = p.finalize[q.finalize];
    const isa::OpDef& op = ctx_.ops->get(f.opcode);
    switch (q.finalize_step) {
      case kLoad: {
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
        q.finalize_t0 = sc_core::sc_time_stamp();
        q.finalize_in = in;
        q.finalize_out = out;
        q.finalize_out_span = out_span;
        dma_->begin(DmaEngine::kRead, in, in_span.first, in_span.second, p.copies, p.route);
        q.finalize_step = kCompute;
        break;
      }
      case kCompute: {
        if (!dma_->advance(DmaEngine::kRead)) return false;
        count(p, Counter::load_cycles, dma_->cycles(DmaEngine::kRead));
        count(p, Counter::load_bytes, q.finalize_in);
        isa::MemoryView parent = ctx_.functional ? dma_->parent_view() : isa::MemoryView{};
        uint64_t cycles;
        if (is_leaf_) {
          cycles = unit_->run(op, f, ctx_.functional ? &parent : nullptr);
          count(p, Counter::unit_cycles, cycles);
          if (const auto rtl = unit_->last_rtl_unit()) count(p, *rtl, 1);
          count_unit_work(op, f, p.layer, p.weight);
        } else {
          const uint64_t elements = static_cast<uint64_t>(f.operands.back().elements());
          cycles = (elements + controller_.lfu_throughput - 1) / controller_.lfu_throughput;
          count(p, Counter::lfu_elements, elements);
          count(p, Counter::reduce_cycles, cycles);
          if (ctx_.functional) isa::execute_reference(op, f, parent);
        }
        q.finalize_step = kStore;
        if (wait_cycles(cycles)) return false;
        break;
      }
      case kStore:
        dma_->begin(DmaEngine::kWrite, q.finalize_out, q.finalize_out_span.first,
                    q.finalize_out_span.second, p.copies, p.route);
        q.finalize_step = kStored;
        break;
      case kStored:
        if (!dma_->advance(DmaEngine::kWrite)) return false;
        count(p, Counter::writeback_cycles, dma_->cycles(DmaEngine::kWrite));
        count(p, Counter::store_bytes, q.finalize_out);
        if (ctx_.trace && sc_core::sc_time_stamp() != q.finalize_t0) {
          const size_t track = ctx_.tree->preorder(p.tree_node);
          ctx_.trace->name_node(track, ctx_.tree->path(p.tree_node));
          ctx_.trace->record(track, kWb, &op.name, q.finalize_t0.value(),
                             sc_core::sc_time_stamp().value());
        }
        ++q.finalize;
        q.finalize_step = kLoad;
        break;
    }
  }
}

}  // namespace fracsim::sim
