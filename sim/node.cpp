// sc_spawn: stage threads are made during the simulation (Node::start).
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/node.h"

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/node_piece.h"

namespace fracsim::sim {

using sc_core::sc_time;

std::ostream& operator<<(std::ostream& os, const Job& job) {
  return os << "job(opcode " << job.instr.opcode << ")";
}

namespace {

bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>>& a,
              const std::vector<std::pair<uint64_t, uint64_t>>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.first < y.second && y.first < x.second) return true;
  return false;
}

// The smallest interval holding every transfer's parent span.
std::pair<uint64_t, uint64_t> parent_span(const std::vector<isa::Transfer>& ts) {
  std::pair<uint64_t, uint64_t> s{UINT64_MAX, 0};
  for (const isa::Transfer& t : ts) {
    const auto b = t.parent.byte_span();
    s.first = std::min(s.first, b.first);
    s.second = std::max(s.second, b.second);
  }
  return s.first > s.second ? std::pair<uint64_t, uint64_t>{0, 0} : s;
}

uint64_t stored_bytes(const std::vector<isa::Transfer>& ts) {
  uint64_t bytes = 0;
  for (const isa::Transfer& t : ts) bytes += t.local.stored_bytes();
  return bytes;
}
}  // namespace

Node::Node(const sc_core::sc_module_name& name, const MachineSpec& spec, int level,
           uint64_t cyclic_base, RunContext& ctx)
    : sc_module(name),
      level_(level),
      is_root_(level < 0),
      is_leaf_(level >= 0 && spec.levels[level].is_leaf),
      ctx_(ctx),
      controller_(is_root_ ? spec.root.controller : spec.levels[level].controller),
      period_ps_(controller_.period_ps()),
      fanout_(level + 1 < static_cast<int>(spec.levels.size()) ? spec.levels[level + 1].fanout : 1),
      root_cyclic_base_(cyclic_base),
      // Channels and events are named: SystemC names unnamed ones through a string stream,
      // which costs more than the rest of the object (a folded run builds dozens of nodes).
      inbox_("inbox", 1),
      to_ld_("to_ld", controller_.pipeline_depth),
      to_ex_("to_ex", controller_.pipeline_depth),
      to_rd_("to_rd", controller_.pipeline_depth),
      to_wb_("to_wb", controller_.pipeline_depth),
      subblocks_("subblocks", controller_.pipeline_depth),
      written_back_("written_back") {
  const MemorySpec& mem = is_root_ ? spec.root.memory : spec.levels[level].memory;
  memory_ = std::make_unique<Memory>("memory", mem, ctx_.functional);
  memory_->set_write_hook([this](uint64_t b, uint64_t e) { invalidate_children(b, e); });
  if (is_root_) {
    FRACSIM_ASSERT(cyclic_base <= mem.capacity, "root: cyclic base beyond capacity");
    root_subblock_ = (mem.capacity - cyclic_base) / controller_.pipeline_depth / isa::kTileAlign *
                     isa::kTileAlign;
  } else {
    const LevelSpec& ls = spec.levels[level];
    const MemorySpec& pm = level == 0 ? spec.root.memory : spec.levels[level - 1].memory;
    dma_ = std::make_unique<DmaEngine>("dma", period_ps_, ls.link.latency + pm.latency,
                                       ls.link.bandwidth);
  }
  if (is_leaf_) unit_ = make_leaf_unit(spec.levels[level]);
}

bool ByPort::operator()(const Node* a, const Node* b) const { return a->port() < b->port(); }

void Node::start() {
  started_ = true;
  constexpr void (Node::*kStages[])() = {&Node::id_stage, &Node::ld_stage, &Node::ex_stage,
                                         &Node::rd_stage, &Node::wb_stage};
  // Named (node names are unique): SystemC's generated names cost more than the thread.
  for (int s = 0; s < 5; ++s)
    sc_core::sc_spawn(sc_bind(kStages[s], this),
                      fmt::format("{}_{}", basename(), kStageName[s]).c_str());
}

Node::~Node() {
  for (Piece* p : in_flight_) delete p;
}

void Node::wait_cycles(uint64_t cycles) {
  if (cycles > 0) wait(sc_time::from_value(cycles * period_ps_));  // resolution: 1 ps
}

uint64_t Node::cycles_since(const sc_time& t0) const {
  const uint64_t ps = (sc_core::sc_time_stamp() - t0).value();  // resolution is 1 ps
  return (ps + period_ps_ - 1) / period_ps_;
}

void Node::trace(int stage, const Piece& p, const sc_time& t0) {
  if (!ctx_.trace || sc_core::sc_time_stamp() == t0) return;
  const size_t track = ctx_.tree->preorder(p.tree_node);
  ctx_.trace->name_node(track, ctx_.tree->path(p.tree_node));
  ctx_.trace->record(track, stage, &p.op->name, t0.value(), sc_core::sc_time_stamp().value());
}

void Node::invalidate_children(uint64_t begin, uint64_t end) {
  if (is_leaf_ || begin >= end) return;
  MachineTree& tree = *ctx_.tree;
  for (int i = 0; i < fanout_; ++i) tree.tpt(tree.child(tree_node_, i)).invalidate(begin, end);
}

Node::Piece* Node::make_piece(const isa::OpDef& op, const isa::Instruction& part, int subblock,
                              bool first) {
  auto* p = new Piece;
  p->op = &op;
  p->part = part;
  p->local = part;
  p->tree_node = tree_node_;
  p->copies = copies_;
  p->route = route_;
  uint64_t base, end;
  if (is_root_) {
    // Operands already live in the main memory; only partial results need room.
    base = root_cyclic_base_ + static_cast<uint64_t>(subblock) * root_subblock_;
    end = base + root_subblock_;
    for (size_t o = 0; o < op.operands.size(); ++o)
      if (op.operands[o].role == isa::OperandRole::out)
        p->local_writes.push_back(part.operands[o].byte_span());
  } else {
    base = layout_.cyclic_base + static_cast<uint64_t>(subblock) * plan_->subblock_bytes;
    end = base + plan_->subblock_bytes;
    uint64_t at = base;
    for (size_t o = 0; o < op.operands.size(); ++o) {
      const isa::TensorRef& parent = part.operands[o];
      isa::TensorRef local;
      auto it = std::find(plan_->static_operands.begin(), plan_->static_operands.end(),
                          static_cast<int>(o));
      if (it != plan_->static_operands.end()) {
        // Static: loaded with the first piece, unless the permutation table still holds it.
        const size_t s = it - plan_->static_operands.begin();
        local = parent.packed_at(layout_.local[s]);
        if (first && !layout_.hit[s]) p->loads.push_back({parent, local});
        if (first && layout_.hit[s]) {
          ++stats()[Counter::static_hits];
          stats()[Counter::static_hit_bytes] += local.stored_bytes();
        }
      } else {
        local = parent.packed_at(at);
        at = isa::align_up(at + local.stored_bytes(), isa::kTileAlign);
        if (isa::operand_is_read(op, part, o)) p->loads.push_back({parent, local});
      }
      if (op.operands[o].role == isa::OperandRole::out) {
        p->stores.push_back({parent, local});
        p->local_writes.push_back(local.byte_span());
      }
      p->local.operands[o] = local;
    }
    base = at;  // scratch follows the cyclic tiles
  }
  if (!is_leaf_) {
    p->split = isa::parallel(op, *ctx_.ops, p->local, fanout_, base);
    if (base + p->split.scratch_bytes > end)
      throw ConfigError(
          fmt::format("{}: {}: partial results need {} bytes more than a cyclic "
                      "sub-block holds",
                      ctx_.tree->path(tree_node_), op.name, base + p->split.scratch_bytes - end));
    p->local_writes.emplace_back(base, base + p->split.scratch_bytes);
  }
  for (size_t o = 0; o < op.operands.size(); ++o) {
    auto span = part.operands[o].byte_span();
    if (isa::operand_is_read(op, part, o)) p->reads.push_back(span);
    if (op.operands[o].role == isa::OperandRole::out) p->writes.push_back(span);
  }
  return p;
}

void Node::id_stage() {
  guarded([&] {
    Job job;
    inbox_.read(job);
    const isa::OpDef& op = ctx_.ops->get(job.instr.opcode);
    tree_node_ = job.tree_node;
    copies_ = job.copies;
    route_ = job.route;
    plan_ = job.plan ? job.plan : std::make_shared<const InstructionPlan>(root_plan(job.instr));
    layout_ = job.layout;
    // The pipeline is empty between instructions below the root, so the cyclic segment may
    // move; the root keeps rotating through its sub-blocks.
    if (!is_root_) next_subblock_ = 0;
    auto instr = std::make_shared<const isa::Instruction>(std::move(job.instr));
    ++stats()[Counter::instructions];
    const size_t n = plan_->pieces.size();
    for (size_t i = 0; i < n; ++i) {
      subblocks_.wait();
      const sc_time t0 = sc_core::sc_time_stamp();
      Piece* p = make_piece(op, plan_->pieces[i], next_subblock_, i == 0);
      next_subblock_ = (next_subblock_ + 1) % controller_.pipeline_depth;
      p->instr = instr;
      p->index = i;
      p->count = n;
      if (i + 1 == n) {
        p->completion = job.completion;
        p->finalize = plan_->finalize;
      }
      holding_[kId] = p;
      wait_cycles(controller_.decode_cycles);
      stats()[Counter::decode_cycles] += controller_.decode_cycles;
      ++stats()[Counter::pieces];
      in_flight_.push_back(p);
      holding_[kId] = nullptr;
      trace(kId, *p, t0);
      to_ld_.write(p);
    }
  });
}

void Node::ld_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_ld_.read(p);
    holding_[kLd] = p;
    // Read-after-write: wait for every earlier piece that writes what this one reads.
    const sc_time t_hazard = sc_core::sc_time_stamp();
    for (bool blocked = true; blocked;) {
      blocked = false;
      for (const Piece* q : in_flight_) {
        if (q == p) break;
        if (overlaps(q->writes, p->reads)) blocked = true;  // not yet written back
      }
      if (blocked) wait(written_back_);
    }
    stats()[Counter::hazard_cycles] += cycles_since(t_hazard);
    const sc_time t0 = sc_core::sc_time_stamp();
    const uint64_t bytes = stored_bytes(p->loads);
    uint64_t cycles = 0;
    if (!is_root_) {
      const auto span = parent_span(p->loads);
      cycles =
          dma_->transfer(DmaEngine::kRead, bytes, span.first, span.second, p->copies, p->route);
      if (ctx_.functional) {
        isa::MemoryView from = dma_->parent_view(), to = memory_->view();
        for (const isa::Transfer& t : p->loads) isa::copy_tensor(t.parent, from, t.local, to);
      }
      for (const isa::Transfer& t : p->loads) {
        const auto s = t.local.byte_span();
        invalidate_children(s.first, s.second);
      }
    }
    stats()[Counter::load_cycles] += cycles;
    stats()[Counter::load_bytes] += bytes;
    holding_[kLd] = nullptr;
    trace(kLd, *p, t0);
    to_ex_.write(p);
  });
}

void Node::ex_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_ex_.read(p);
    holding_[kEx] = p;
    const sc_time t0 = sc_core::sc_time_stamp();
    if (is_leaf_) {
      isa::MemoryView mv = memory_->view();
      const uint64_t cycles = unit_->run(*p->op, p->local, ctx_.functional ? &mv : nullptr);
      const auto work = static_cast<uint64_t>(isa::instruction_work(*p->op, p->local));
      stats()[p->op->unit == "matrix" ? Counter::matrix_ops : Counter::vector_ops] += work;
      stats()[Counter::unit_cycles] += cycles;
      if (const auto rtl = unit_->last_rtl_unit()) ++stats()[*rtl];
      wait_cycles(cycles);
    } else {
      dispatch(*p->op, p->split.children, p->local_writes);
    }
    stats()[Counter::execute_cycles] += cycles_since(t0);
    holding_[kEx] = nullptr;
    trace(kEx, *p, t0);
    to_rd_.write(p);
  });
}

void Node::wb_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_wb_.read(p);
    holding_[kWb] = p;
    const sc_time t0 = sc_core::sc_time_stamp();
    const uint64_t bytes = stored_bytes(p->stores);
    uint64_t cycles = 0;
    if (!is_root_) {
      const auto span = parent_span(p->stores);
      cycles =
          dma_->transfer(DmaEngine::kWrite, bytes, span.first, span.second, p->copies, p->route);
      if (ctx_.functional) {
        isa::MemoryView from = memory_->view(), to = dma_->parent_view();
        for (const isa::Transfer& t : p->stores) isa::copy_tensor(t.local, from, t.parent, to);
      }
    }
    stats()[Counter::writeback_cycles] += cycles;
    stats()[Counter::store_bytes] += bytes;
    trace(kWb, *p, t0);
    for (const isa::Instruction& f : p->finalize) run_finalize(f, *p);
    FRACSIM_ASSERT(!in_flight_.empty() && in_flight_.front() == p, "{}: write-back out of order",
                   name());
    in_flight_.pop_front();
    written_back_.notify(sc_core::SC_ZERO_TIME);
    subblocks_.post();
    holding_[kWb] = nullptr;
    if (p->completion) {
      // Its children are idle until the next instruction: their state is final for now.
      if (!is_leaf_ && !is_root_) ctx_.tree->update_below_digest(p->tree_node);
      if (is_root_) {
        ++ctx_.done.done;
        ctx_.done.picoseconds = sc_core::sc_time_stamp().value();
        if (ctx_.progress) ctx_.progress(ctx_.done);
      }
      if (--p->completion->remaining == 0) p->completion->done.notify(sc_core::SC_ZERO_TIME);
    }
    delete p;
  });
}

std::string Node::describe_busy() const {
  std::string out;
  for (int s = 0; s < 5; ++s)
    if (const Piece* p = holding_[s])
      out += fmt::format("{}{} stage {} holds piece {} of {} of instruction `{}`",
                         out.empty() ? "" : "; ", ctx_.tree->path(p->tree_node), kStageName[s],
                         p->index + 1, p->count, instruction_text(*p->op, *p->instr));
  return out;
}

}  // namespace fracsim::sim
