// sc_spawn: stage processes are made during the simulation (Node::start).
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/node.h"

#include <algorithm>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/node_piece.h"

namespace fracsim::sim {

using sc_core::sc_time;

namespace {

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
      root_cyclic_base_(cyclic_base) {
  const MemorySpec& mem = is_root_ ? spec.root.memory : spec.levels[level].memory;
  memory_ = std::make_unique<Memory>("memory", mem, ctx_.functional);
  if (is_root_) {
    FRACSIM_ASSERT(cyclic_base <= mem.capacity, "root: cyclic base beyond capacity");
    root_subblock_ = root_subblock_bytes(spec, cyclic_base);
  } else {
    const LevelSpec& ls = spec.levels[level];
    const MemorySpec& pm = level == 0 ? spec.root.memory : spec.levels[level - 1].memory;
    dma_ = std::make_unique<DmaEngine>("dma", period_ps_, ls.link.latency + pm.latency,
                                       ls.link.bandwidth, ls.link.pipelined);
  }
  if (is_leaf_) unit_ = make_leaf_unit(spec.levels[level]);
}

bool ByPort::operator()(const Node* a, const Node* b) const { return a->port() < b->port(); }

void Node::start() {
  pipe_ = std::make_unique<Pipeline>(controller_.pipeline_depth);
  constexpr void (Node::*kSteps[])() = {&Node::id_step, &Node::ld_step, &Node::ex_step,
                                        &Node::rd_step, &Node::wb_step};
  sc_core::sc_spawn_options method;
  method.spawn_method();
  // Named (node names are unique): SystemC's generated names cost more than the process.
  for (int s = 0; s < 5; ++s)
    sc_core::sc_spawn(sc_bind(kSteps[s], this),
                      fmt::format("{}_{}", basename(), kStageName[s]).c_str(), &method);
  if (posts_writes())
    sc_core::sc_spawn(sc_bind(&Node::land_step, this), fmt::format("{}_land", basename()).c_str(),
                      &method);
}

void Node::submit(Job job) {
  if (!pipe_) start();
  pipe_->inbox.write(std::move(job));  // unbounded: the root's holds the whole program
}

Node::~Node() {
  if (!pipe_) return;
  // A run that stopped early leaves pieces in flight, and maybe one still being decoded.
  std::deque<Piece*>& flying = pipe_->in_flight;
  Piece* decoding = pipe_->stages[kId].piece;
  if (decoding && std::find(flying.begin(), flying.end(), decoding) == flying.end())
    delete decoding;
  for (Piece* p : flying) delete p;
}

bool Node::wait_cycles(uint64_t cycles) {
  if (cycles == 0) return false;
  sc_core::next_trigger(sc_time::from_value(cycles * period_ps_));  // resolution: 1 ps
  return true;
}

uint64_t Node::cycles_since(const sc_time& t0) const {
  const uint64_t ps = (sc_core::sc_time_stamp() - t0).value();  // resolution is 1 ps
  return (ps + period_ps_ - 1) / period_ps_;
}

void Node::trace(int stage, const Piece& p, const sc_time& t0) {
  trace(stage, p, t0, sc_core::sc_time_stamp());
}

void Node::trace(int stage, const Piece& p, const sc_time& t0, const sc_time& t1) {
  if (!ctx_.trace || t1 == t0) return;
  const size_t track = ctx_.tree->preorder(p.tree_node);
  ctx_.trace->name_node(track, ctx_.tree->path(p.tree_node));
  ctx_.trace->record(track, stage, &p.op->name, t0.value(), t1.value());
}

void Node::count(Counter c, uint64_t v, uint32_t layer, uint64_t weight) {
  stats()[c] += v;
  ctx_.layers[layer].levels[static_cast<size_t>(level_ + 1)][c] += v * weight;
}

void Node::count_unit_work(const isa::OpDef& op, const isa::Instruction& instr, uint32_t layer,
                           uint64_t weight) {
  isa::PackedKey key(piece_key(instr));
  auto it = ctx_.unit_work.find(key);
  if (it == ctx_.unit_work.end())
    it = ctx_.unit_work.emplace(std::move(key), isa::unit_work(op, instr)).first;
  LayerTally& tally = ctx_.layers[layer];
  for (const isa::UnitWork& w : it->second) {
    const auto ops = static_cast<uint64_t>(w.ops);
    count(unit_counter(w.unit), ops, layer, weight);
    tally.work[static_cast<size_t>(w.unit)][static_cast<size_t>(w.dtype)] += ops * weight;
  }
}

void Node::invalidate_children(uint64_t begin, uint64_t end) {
  if (is_leaf_ || begin >= end) return;
  MachineTree& tree = *ctx_.tree;
  for (int i = 0; i < fanout_; ++i) tree.tpt(tree.child(tree_node_, i)).invalidate(begin, end);
}

Node::Piece* Node::make_piece(const isa::OpDef& op, size_t index, int subblock, int accumulator) {
  const isa::Instruction& part = plan_->pieces[index];
  const bool first = index == 0;
  auto* p = new Piece;
  if (!plan_->holds_output.empty()) {
    p->accumulator = accumulator;
    p->holds_output = plan_->holds_output[index] != 0;
    p->continues = index > 0 && plan_->holds_output[index - 1] != 0;
    if (hold_out_ && index + 1 == plan_->pieces.size()) p->holds_output = p->held_across = true;
    p->takes_over = index == 0 && takes_over_;
  }
  p->plan = plan_;
  p->op = &op;
  p->part = part;
  p->local = part;
  // What the root saw ahead (Instruction::reused) names views of its memory, not of this one;
  // a constant that recurs alike the node passes on where it holds it (passed_recurs).
  if (!is_root_) {
    p->local.reused = 0;
    p->local.recurs = passed_recurs(*plan_, part);
  }
  p->tree_node = tree_node_;
  p->copies = copies_;
  p->route = route_;
  p->layer = layer_;
  p->weight = weight_;
  p->after = after_;
  p->parent_orders = parent_orders_;
  uint64_t base, end;
  if (is_root_) {
    // Operands already live in the main memory; only partial results need room.
    base = root_cyclic_base_ + static_cast<uint64_t>(subblock) * root_subblock_;
    end = base + root_subblock_;
    for (size_t o = 0; o < op.operands.size(); ++o)
      if (op.operands[o].role == isa::OperandRole::out) {
        p->local_writes.push_back(part.operands[o].byte_span());
        p->local_outs.push_back(part.operands[o]);
      }
  } else {
    base = layout_.cyclic_base + static_cast<uint64_t>(subblock) * plan_->subblock_bytes;
    end = base + plan_->subblock_bytes;
    uint64_t at = base + plan_->accumulator_bytes;
    uint64_t acc = layout_.cyclic_base + static_cast<uint64_t>(accumulator) * plan_->subblock_bytes;
    p->accumulator_at = acc;
    for (size_t o = 0; o < op.operands.size(); ++o) {
      const isa::TensorRef& parent = part.operands[o];
      const bool out = op.operands[o].role == isa::OperandRole::out;
      isa::TensorRef local;
      auto it = std::find(plan_->static_operands.begin(), plan_->static_operands.end(),
                          static_cast<int>(o));
      const ResidentInput* resident = nullptr;
      for (const ResidentInput& r : layout_.resident)
        if (r.operand == static_cast<int>(o)) resident = &r;
      if (it != plan_->static_operands.end() && plan_->kept_out == static_cast<int>(o)) {
        // The whole output held static: the piece writes its part there.
        const size_t s = it - plan_->static_operands.begin();
        const auto at = isa::view_within(plan_->requests[s].view, parent, layout_.local[s]);
        FRACSIM_ASSERT(at, "{}: a piece's output outside the instruction's", name());
        local = *at;
      } else if (resident && isa::operand_is_read(op, part, o)) {
        // Part of an output the node kept: read there, not loaded.
        isa::TensorRef entry = resident->entry;
        entry.address = pipe_->instr->operands[o].address - resident->offset;
        const auto at = isa::view_within(entry, parent, resident->local);
        FRACSIM_ASSERT(at, "{}: a piece's input outside the kept output it lies in", name());
        local = *at;
        count(*p, Counter::kept_read_bytes, local.stored_bytes());
      } else if (it != plan_->static_operands.end()) {
        // Static: loaded with the first piece, unless the permutation table still holds it.
        const size_t s = it - plan_->static_operands.begin();
        local = parent.packed_at(layout_.local[s]);
        const uint8_t role = broadcast_ ? broadcast_->role[s] : uint8_t{Broadcast::kOwn};
        const bool read = s >= layout_.room.size() || !layout_.room[s];
        if (first && !layout_.hit[s] && read && role == Broadcast::kOwn) {
          p->loads.push_back({parent, local});
          p->load_operands.push_back(static_cast<int>(o));
        }
        if (first && !layout_.hit[s] && read && role != Broadcast::kOwn) {
          p->broadcast = broadcast_;
          p->shared.push_back({parent, local});
          if (role == Broadcast::kLead)
            p->lead.push_back({parent, local});
          else
            p->received_bytes += local.stored_bytes();
        }
        if (first && layout_.hit[s] && read) {
          count(*p, Counter::static_hits, 1);
          count(*p, Counter::static_hit_bytes, local.stored_bytes());
        }
      } else if (out && p->accumulator >= 0) {
        // Resident partial sums: the group's tile, loaded (when read) by its first piece only.
        local = parent.packed_at(acc);
        acc = isa::align_up(acc + local.stored_bytes(), isa::kTileAlign);
        if (isa::operand_is_read(op, part, o) && !p->continues) {
          if (first && layout_.out_hit)
            count(*p, Counter::resident_bytes, local.stored_bytes());
          else {
            p->loads.push_back({parent, local});
            p->load_operands.push_back(static_cast<int>(o));
          }
        }
      } else {
        local = parent.packed_at(at);
        at = isa::align_up(at + local.stored_bytes(), isa::kTileAlign);
        if (isa::operand_is_read(op, part, o)) {
          p->loads.push_back({parent, local});
          p->load_operands.push_back(static_cast<int>(o));
        }
      }
      if (out) {
        if (!p->holds_output) p->stores.push_back({parent, local});
        // The bytes it neither writes back nor (the next piece) loads again; held for the
        // parent's next piece, only the write-back (that piece counts its own load).
        if (p->holds_output)
          count(*p, Counter::resident_bytes, (p->held_across ? 1 : 2) * local.stored_bytes());
        p->local_writes.push_back(local.byte_span());
        p->local_outs.push_back(local);
      }
      p->local.operands[o] = local;
    }
    base = at;  // scratch follows the cyclic tiles
  }
  if (!is_leaf_) {
    const isa::Instruction like = plan_like(*plan_);
    p->split = isa::parallel(op, *ctx_.ops, p->local, fanout_, base, ctx_.model, level_,
                             is_root_ ? nullptr : &like);
    if (base + p->split.scratch_bytes > end)
      throw ConfigError(
          fmt::format("{}: {}: partial results need {} bytes more than a cyclic "
                      "sub-block holds",
                      ctx_.tree->path(tree_node_), op.name, base + p->split.scratch_bytes - end));
    p->scratch = {base, base + p->split.scratch_bytes};
    p->local_writes.push_back(p->scratch);
  }
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const isa::TensorRef& view = part.operands[o];
    const bool out = op.operands[o].role == isa::OperandRole::out;
    if (isa::operand_is_read(op, part, o) &&
        !(out && (p->continues || (first && layout_.out_hit)))) {
      p->reads.push_back(view);
      p->read_operands |= operand_bit(o);
    }
    if (out && !p->holds_output) p->writes.push_back(view);
  }
  return p;
}

void Node::begin_batch(DmaEngine::Channel channel, const Piece& p,
                       const std::vector<isa::Transfer>& transfers, uint64_t requested_ps,
                       bool latency) {
  if (is_root_) return;  // the root's operands are in its own memory
  const auto span = parent_span(transfers);
  dma_->begin(channel, stored_bytes(transfers), span.first, span.second, p.copies, p.route, latency,
              requested_ps);
}

bool Node::batch_done(DmaEngine::Channel channel, const std::vector<isa::Transfer>& transfers,
                      uint64_t& cycles) {
  cycles = 0;
  if (is_root_) return true;
  if (!dma_->advance(channel)) return false;
  cycles = dma_->cycles(channel);
  if (channel == DmaEngine::kRead) {
    loaded(transfers);
  } else if (ctx_.functional) {
    const isa::MemoryView parent = dma_->parent_view(), local = memory_->view();
    for (const isa::Transfer& t : transfers) isa::copy_tensor(t.local, local, t.parent, parent);
  }
  return true;
}

void Node::loaded(const std::vector<isa::Transfer>& transfers) {
  if (ctx_.functional) {
    const isa::MemoryView parent = dma_->parent_view(), local = memory_->view();
    for (const isa::Transfer& t : transfers) isa::copy_tensor(t.parent, parent, t.local, local);
  }
  // What was loaded here replaces what the children's permutation tables hold of it.
  for (const isa::Transfer& t : transfers) {
    const auto s = t.local.byte_span();
    invalidate_children(s.first, s.second);
  }
}

// ID: takes a job, then cuts it into its plan's pieces, each taking a free sub-block of the
// cyclic segment and decode_cycles.
void Node::id_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    Pipeline::Stage& st = q.stages[kId];
    enum { kTakeJob, kNextPiece, kDecoded, kPass };
    while (true) switch (st.step) {
        case kTakeJob: {
          Job job;
          if (!q.inbox.take(job)) return;
          q.op = &ctx_.ops->get(job.instr.opcode);
          tree_node_ = job.tree_node;
          copies_ = job.copies;
          route_ = job.route;
          layer_ = job.layer;
          weight_ = job.weight;
          plan_ =
              job.plan ? job.plan : std::make_shared<const InstructionPlan>(root_plan(job.instr));
          layout_ = job.layout;
          broadcast_ = job.broadcast;
          after_ = std::move(job.after);
          parent_orders_ = job.parent_orders;
          hold_out_ = job.hold_out;
          // Below the root the cyclic segment may move between instructions (the parent says
          // where the rotation starts); the root keeps rotating through its sub-blocks.
          if (!is_root_) {
            next_subblock_ = job.first_subblock;
            takes_over_ = job.continues_tile;
            first_accumulator_ =
                job.first_accumulator >= 0 ? job.first_accumulator : job.first_subblock;
          }
          q.instr = std::make_shared<const isa::Instruction>(std::move(job.instr));
          q.completion = job.completion;
          q.next_piece = 0;
          count(Counter::instructions, 1, layer_, weight_);
          st.step = kNextPiece;
          break;
        }
        case kNextPiece: {
          const size_t n = plan_->pieces.size(), i = q.next_piece;
          if (i == n) {
            st.step = kTakeJob;
            break;
          }
          if (q.free_subblocks == 0) {
            sc_core::next_trigger(q.subblock_freed);
            return;
          }
          // Resident partial sums: a group starts in the next accumulator, once the group
          // before in it has written back.
          const bool resident = !plan_->holds_output.empty();
          const bool starts_group = resident && (i == 0 || !plan_->holds_output[i - 1]);
          // The first group takes the sub-block the job's rotation starts at (Job::first_subblock),
          // so that it need not wait for the accumulator of a job still draining there.
          const int acc = !starts_group ? accumulator_
                          : i == 0      ? first_accumulator_
                                        : (accumulator_ + 1) % controller_.pipeline_depth;
          const uint64_t acc_at =
              layout_.cyclic_base + static_cast<uint64_t>(acc) * plan_->subblock_bytes;
          // A first group continuing the tile the job before held (Job::first_accumulator)
          // takes its accumulator over: the EX stage keeps their order.
          const bool takes = i == 0 && takes_over_;
          if (starts_group && !takes && q.accumulators_busy.count(acc_at) > 0) {
            sc_core::next_trigger(q.written_back);
            return;
          }
          --q.free_subblocks;
          st.t0 = sc_core::sc_time_stamp();
          if (is_root_ && i == 0) ctx_.spans[ctx_.started++].start_ps = st.t0.value();
          if (starts_group) q.accumulators_busy.insert(acc_at);
          accumulator_ = acc;
          Piece* p = make_piece(*q.op, i, next_subblock_, acc);
          next_subblock_ = (next_subblock_ + 1) % controller_.pipeline_depth;
          p->instr = q.instr;
          p->index = i;
          p->count = n;
          if (i + 1 == n) {
            p->completion = q.completion;
            p->finalize = plan_->finalize;
          }
          st.piece = p;
          st.step = kDecoded;
          if (wait_cycles(controller_.decode_cycles)) return;
          break;
        }
        case kDecoded:
          count(*st.piece, Counter::decode_cycles, controller_.decode_cycles);
          count(*st.piece, Counter::pieces, 1);
          ++ctx_.simulated_pieces[static_cast<size_t>(level_ + 1)];
          q.in_flight.push_back(st.piece);
          trace(kId, *st.piece, st.t0);
          st.step = kPass;
          break;
        case kPass:
          if (!q.to_ld.put(st.piece)) return;
          st.piece->queued_ps = sc_core::sc_time_stamp().value();
          st.piece = nullptr;
          ++q.next_piece;
          st.step = kNextPiece;
          break;
      }
  });
}

std::vector<std::pair<uint64_t, uint64_t>> Node::local_loads(const Piece& p) {
  std::vector<std::pair<uint64_t, uint64_t>> loads;
  for (const isa::Transfer& t : p.loads) loads.push_back(t.local.byte_span());
  for (const isa::Transfer& t : p.shared) loads.push_back(t.local.byte_span());
  return loads;
}

std::vector<std::pair<uint64_t, uint64_t>> Node::local_use(const Piece& p) {
  std::vector<std::pair<uint64_t, uint64_t>> used = p.local_writes;
  for (const isa::TensorRef& t : p.local.operands) used.push_back(t.byte_span());
  return used;
}

bool Node::overwrites_earlier(const Piece& p) const {
  const std::vector<std::pair<uint64_t, uint64_t>> loads = local_loads(p);
  if (loads.empty()) return false;
  for (const Piece* e : pipe_->in_flight) {
    if (e == &p) break;
    if (!e->sent && overlaps(local_use(*e), loads)) return true;
  }
  return false;
}

bool Node::outputs_overwrite_earlier(const Piece& p) const {
  std::vector<std::pair<uint64_t, uint64_t>> outs;
  for (const isa::TensorRef& t : p.local_outs) outs.push_back(t.byte_span());
  for (const Piece* e : pipe_->in_flight) {
    if (e == &p) break;
    if (!e->sent && overlaps(is_leaf_ ? e->local_writes : local_use(*e), outs)) return true;
  }
  return false;
}

uint64_t Node::load_requested(const Piece& p, const std::vector<isa::TensorRef>& reads,
                              uint64_t operands,
                              const std::vector<std::pair<uint64_t, uint64_t>>& lands) const {
  if (is_root_ || !ctx_.spec->levels[level_].link.pipelined) return UINT64_MAX;
  // Queued, and every earlier piece it waits for (writing what it reads, or using the local
  // memory it loads into) written back, and every piece of the parent's it waits for retired.
  uint64_t at = p.queued_ps;
  for (const Pipeline::Retired& r : pipe_->retired) {
    if (r.ps > at && p.orders_after(r.instr) && views_meet(r.writes, reads, ctx_.spec->hazards))
      at = r.ps;
    if (r.sent_ps > at && overlaps(r.local, lands)) at = r.sent_ps;
  }
  for (const After& a : p.after)
    if ((a.reads & operands) != 0 && a.settle->computed_ps > at) at = a.settle->computed_ps;
  return at;
}

const sc_core::sc_event* Node::held_back(const Piece& p, const std::vector<isa::TensorRef>& views,
                                         uint64_t operands) const {
  for (const Piece* e : pipe_->in_flight) {
    if (e == &p) break;
    if (p.orders_after(e->instr) && views_meet(e->writes, views, ctx_.spec->hazards))
      return &pipe_->written_back;
  }
  for (const After& a : p.after)
    if (!a.settle->computed && (a.reads & operands) != 0) return &a.settle->computed_event;
  return nullptr;
}

bool Node::at_step_end(int stage) {
  Pipeline::Stage& st = pipe_->stages[stage];
  const uint64_t now = sc_core::sc_time_stamp().value();
  // The wait ends only with its event: the stage runs again at the same time only once the
  // time step has settled.
  if (st.settled_ps == now) return true;
  st.settled_ps = now;
  ctx_.step_end->wait(tree_node_ * pipe_->stages.size() + static_cast<size_t>(stage), st.step_end);
  sc_core::next_trigger(st.step_end);
  return false;
}

// LD: waits for the earlier pieces that write what this one reads, then loads its tiles.
void Node::ld_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    Pipeline::Stage& st = q.stages[kLd];
    enum { kTake, kHazard, kEarly, kBroadcast, kAwait, kLoad, kPass };
    while (true) switch (st.step) {
        case kTake:
          if (!q.to_ld.take(st.piece)) return;
          st.t0 = sc_core::sc_time_stamp();
          st.step = kHazard;
          break;
        case kBroadcast: {
          // This node's read for its group: the bytes move once, for every receiver.
          if (!dma_->advance(DmaEngine::kRead)) return;
          BroadcastRound& round = *st.piece->broadcast->round;
          if (--round.pending == 0) round.done.notify(sc_core::SC_ZERO_TIME);
          st.step = kAwait;
          break;
        }
        case kAwait: {
          // Every broadcast of the round has arrived; then this node's own bytes, whose
          // descriptors were issued with the broadcast's.
          const Piece* p = st.piece;
          if (p->broadcast->round->pending > 0) {
            sc_core::next_trigger(p->broadcast->round->done);
            return;
          }
          loaded(p->shared);
          const auto span = parent_span(p->loads);
          dma_->begin(DmaEngine::kRead, stored_bytes(p->loads), span.first, span.second, p->copies,
                      p->route, false);
          st.step = kLoad;
          break;
        }
        case kHazard: {
          // Read-after-write: every earlier piece that writes what this one reads must have
          // written back. With prefetch below, only what this node loads itself waits here;
          // the children wait for the rest (Job::after).
          Piece* p = st.piece;
          std::vector<isa::TensorRef> own;
          uint64_t own_operands = 0;
          const bool below = !is_leaf_ && ctx_.spec->levels[level_ + 1].prefetch;
          if (below) {
            for (const auto* ts : {&p->loads, &p->shared})
              for (const isa::Transfer& t : *ts) own.push_back(t.parent);
            for (int o : p->load_operands) own_operands |= operand_bit(static_cast<size_t>(o));
            if (!p->shared.empty()) own_operands = p->read_operands;
          }
          const sc_core::sc_event* held =
              below ? held_back(*p, own, own_operands) : held_back(*p, p->reads, p->read_operands);
          // What holds it may end later in this time step.
          if (held && !at_step_end(kLd)) return;
          // A node that takes an instruction while the one before drains (LevelSpec::overlap)
          // may have placed it over memory the earlier pieces still use: their write-back
          // frees it.
          auto overwrites = [&] {
            return !is_root_ && ctx_.spec->levels[level_].overlap && overwrites_earlier(*p);
          };
          if (held && !p->split_loads && !p->broadcast && !is_root_ &&
              ctx_.spec->levels[level_].prefetch && !overwrites()) {
            // Prefetch: the loads nothing holds back go first.
            p->split_loads = true;
            std::vector<isa::Transfer> late;
            std::vector<int> late_operands;
            std::vector<isa::TensorRef> reads;
            std::vector<std::pair<uint64_t, uint64_t>> lands;
            uint64_t operands = 0;
            for (size_t t = 0; t < p->loads.size(); ++t) {
              const uint64_t bit = operand_bit(static_cast<size_t>(p->load_operands[t]));
              if (held_back(*p, {p->loads[t].parent}, bit)) {
                late.push_back(std::move(p->loads[t]));
                late_operands.push_back(p->load_operands[t]);
              } else {
                reads.push_back(p->loads[t].parent);
                lands.push_back(p->loads[t].local.byte_span());
                operands |= bit;
                p->early.push_back(std::move(p->loads[t]));
              }
            }
            p->loads = std::move(late);
            p->load_operands = std::move(late_operands);
            if (!p->early.empty()) {
              count(*p, Counter::hazard_cycles, cycles_since(st.t0));
              st.t0 = sc_core::sc_time_stamp();
              begin_batch(DmaEngine::kRead, *p, p->early,
                          load_requested(*p, reads, operands, lands));
              st.step = kEarly;
              break;
            }
          }
          if (held) {
            sc_core::next_trigger(*held);
            return;
          }
          if (overwrites()) {
            sc_core::next_trigger(q.written_back);
            return;
          }
          count(*p, Counter::hazard_cycles, cycles_since(st.t0));
          st.t0 = sc_core::sc_time_stamp();
          if (p->broadcast) {
            st.step = kAwait;
            if (p->lead.empty()) break;
            const auto span = parent_span(p->lead);
            dma_->begin(DmaEngine::kRead, stored_bytes(p->lead), span.first, span.second,
                        p->broadcast->lead_copies, p->route);
            st.step = kBroadcast;
            break;
          }
          begin_batch(DmaEngine::kRead, *p, p->loads,
                      load_requested(*p, p->reads, p->read_operands, local_loads(*p)));
          st.step = kLoad;
          break;
        }
        case kEarly: {
          // The loads moved ahead of the hazard have arrived; the rest wait for it.
          const Piece* p = st.piece;
          uint64_t cycles = 0;
          if (!batch_done(DmaEngine::kRead, p->early, cycles)) return;
          count(*p, Counter::load_cycles, cycles);
          count(*p, Counter::load_bytes, stored_bytes(p->early));
          trace(kLd, *p, st.t0);
          st.t0 = sc_core::sc_time_stamp();
          st.step = kHazard;
          break;
        }
        case kLoad: {
          const Piece* p = st.piece;
          uint64_t cycles = 0;
          if (!batch_done(DmaEngine::kRead, p->loads, cycles)) return;
          if (p->broadcast) {
            cycles = cycles_since(st.t0);
            count(*p, Counter::load_bytes, stored_bytes(p->lead));
            count(*p, Counter::broadcast_bytes, p->received_bytes);
          }
          count(*p, Counter::load_cycles, cycles);
          count(*p, Counter::load_bytes, stored_bytes(p->loads));
          trace(kLd, *p, st.t0);
          st.step = kPass;
          break;
        }
        case kPass:
          if (!st.pass_to(q.to_ex)) return;
          break;
      }
  });
}

// EX: a leaf runs the piece on its unit; an inner node hands the children their instructions
// and waits for all of them.
void Node::ex_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    Pipeline::Stage& st = q.stages[kEx];
    enum { kTake, kReady, kDispatch, kChildren, kDone, kPass };
    while (true) switch (st.step) {
        case kTake:
          if (!q.to_ex.take(st.piece)) return;
          st.step = kReady;
          break;
        case kReady: {
          Piece* p = st.piece;
          if (p->continues || p->takes_over) {
            // Its children add onto the tile the previous piece's LFU may still be combining.
            auto it = std::find(q.in_flight.begin(), q.in_flight.end(), p);
            if (it != q.in_flight.begin()) {
              const Piece* prev = *std::prev(it);
              if (!prev->split.reductions.empty() && !prev->reduced) {
                sc_core::next_trigger(q.reduced);
                return;
              }
            }
          }
          // Placed over memory an earlier piece still uses (Node::overwrites_earlier), its
          // loads waited for that piece to write back; its out tiles, which its execution
          // writes, wait here.
          if (!is_root_ && ctx_.spec->levels[level_].overlap && !p->continues && !p->takes_over &&
              outputs_overwrite_earlier(*p)) {
            sc_core::next_trigger(q.written_back);
            return;
          }
          st.t0 = sc_core::sc_time_stamp();
          if (!is_leaf_) {
            st.step = kDispatch;
            break;
          }
          isa::MemoryView mv = memory_->view();
          const uint64_t cycles = unit_->run(*p->op, p->local, ctx_.functional ? &mv : nullptr);
          count_unit_work(*p->op, p->local, p->layer, p->weight);
          count(*p, Counter::unit_cycles, cycles);
          if (const auto rtl = unit_->last_rtl_unit()) count(*p, *rtl, 1);
          st.step = kDone;
          if (wait_cycles(cycles)) return;
          break;
        }
        case kDispatch: {
          // With overlap below, the piece goes on to RD as soon as its children have their
          // instructions; RD waits for them. Otherwise EX waits, and nothing is outstanding.
          const bool overlap = ctx_.spec->levels[level_ + 1].overlap;
          if (q.dispatches.empty()) {
            dispatch(*st.piece);
          } else if (overlap && !at_step_end(kEx)) {
            return;
          } else if (!overlap || !dispatch_beside(*st.piece)) {
            sc_core::next_trigger(q.dispatch_ended);
            return;
          }
          st.step = overlap ? kPass : kChildren;
          break;
        }
        case kChildren: {
          Completion& children = q.dispatches.front()->children;
          if (children.remaining > 0) {
            sc_core::next_trigger(children.done);
            return;
          }
          dispatch_end(*st.piece);
          st.step = kDone;
          break;
        }
        case kDone:
          count(*st.piece, Counter::execute_cycles, cycles_since(st.t0));
          trace(kEx, *st.piece, st.t0);
          st.step = kPass;
          break;
        case kPass:
          if (!st.pass_to(q.to_rd)) return;
          break;
      }
  });
}

// WB: stores the piece's results to the parent's memory, runs the instruction's finalize work
// after its last piece, and frees the piece's sub-block. A posted write (link.posted_writes):
// the stage sends the data and takes the next piece, and the piece lands (retires) a latency
// later, in order (land_step); a piece with finalize work waits for its landing.
void Node::wb_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    Pipeline::Stage& st = q.stages[kWb];
    enum { kTake, kSettled, kStore, kLanded, kFinalize, kRetire };
    while (true) switch (st.step) {
        case kTake:
          if (!q.to_wb.take(st.piece)) return;
          st.t0 = sc_core::sc_time_stamp();
          st.step = kSettled;
          break;
        case kSettled: {
          // Not over what an unfinished piece of the parent's still reads or writes.
          const Piece* p = st.piece;
          for (const After& a : p->after)
            if (a.writes && !a.settle->done && !p->writes.empty()) {
              sc_core::next_trigger(a.settle->event);
              return;
            }
          st.t0 = sc_core::sc_time_stamp();
          // A posted write's latency is the data's flight, after it has left: off the stage.
          begin_batch(DmaEngine::kWrite, *p, p->stores, p->queued_ps, !posts_writes());
          st.step = kStore;
          break;
        }
        case kStore: {
          Piece* p = st.piece;
          uint64_t cycles = 0;
          if (!batch_done(DmaEngine::kWrite, p->stores, cycles)) return;
          count(*p, Counter::writeback_cycles, cycles);
          count(*p, Counter::store_bytes, stored_bytes(p->stores));
          trace(kWb, *p, st.t0);
          q.finalize = 0;
          q.finalize_step = 0;
          st.step = kFinalize;
          if (!posts_writes()) break;
          release_local(*p);
          const uint64_t now = sc_core::sc_time_stamp().value();
          const uint64_t lands = now + dma_->latency_cycles() * period_ps_;
          if (p->finalize.empty()) {
            if (q.landing.empty()) q.land_due.notify(sc_core::sc_time::from_value(lands - now));
            q.landing.emplace_back(p, lands);
            q.retired_kept = std::max(
                q.retired_kept, static_cast<size_t>(controller_.pipeline_depth) + q.landing.size());
            st.piece = nullptr;
            st.step = kTake;
            break;
          }
          // Its finalize work reads what the pieces wrote: once they have all landed.
          q.lands_at = sc_core::sc_time::from_value(lands);
          st.step = kLanded;
          break;
        }
        case kLanded:
          if (sc_core::sc_time_stamp() < q.lands_at) {
            sc_core::next_trigger(q.lands_at - sc_core::sc_time_stamp());
            return;
          }
          if (q.in_flight.front() != st.piece) {
            sc_core::next_trigger(q.written_back);
            return;
          }
          st.step = kFinalize;
          break;
        case kFinalize:
          if (!finalize_step(*st.piece)) return;
          st.step = kRetire;
          break;
        case kRetire:
          retire(st.piece);
          st.piece = nullptr;
          st.step = kTake;
          break;
      }
  });
}

void Node::land_step() {
  guarded([&] {
    Pipeline& q = *pipe_;
    const uint64_t now = sc_core::sc_time_stamp().value();
    while (!q.landing.empty() && q.landing.front().second <= now) {
      Piece* p = q.landing.front().first;
      q.landing.pop_front();
      retire(p);
    }
    if (q.landing.empty())
      sc_core::next_trigger(q.land_due);
    else
      sc_core::next_trigger(sc_core::sc_time::from_value(q.landing.front().second - now));
  });
}

bool Node::posts_writes() const {
  return !is_root_ && ctx_.spec->levels[level_].link.posted_writes;
}

void Node::release_local(Piece& p) {
  Pipeline& q = *pipe_;
  p.sent = true;
  p.sent_ps = sc_core::sc_time_stamp().value();
  // A held tile's group releases its claim too; the group continuing it made its own.
  if (p.accumulator >= 0 && (!p.holds_output || p.held_across)) {
    const auto claim = q.accumulators_busy.find(p.accumulator_at);
    FRACSIM_ASSERT(claim != q.accumulators_busy.end(), "{}: an accumulator unclaimed", name());
    q.accumulators_busy.erase(claim);
  }
  // A writer over what it wrote or read no longer waits (Settle::done).
  if (p.settle) {
    p.settle->done = true;
    p.settle->ps = p.sent_ps;
    p.settle->event.notify(sc_core::SC_ZERO_TIME);
  }
  ++q.free_subblocks;
  q.subblock_freed.notify(sc_core::SC_ZERO_TIME);
  q.written_back.notify(sc_core::SC_ZERO_TIME);
}

void Node::retire(Piece* p) {
  Pipeline& q = *pipe_;
  FRACSIM_ASSERT(!q.in_flight.empty() && q.in_flight.front() == p, "{}: write-back out of order",
                 name());
  if (!p->sent) release_local(*p);
  const uint64_t now = sc_core::sc_time_stamp().value();
  q.in_flight.pop_front();
  if (!is_root_ && ctx_.spec->levels[level_].link.pipelined) {
    // A load waits for what a piece in flight when it was queued wrote or used: those of the
    // sub-blocks and those landing then.
    const size_t kept = std::max(static_cast<size_t>(controller_.pipeline_depth), q.retired_kept);
    while (q.retired.size() >= kept) q.retired.pop_front();
    q.retired.push_back({p->instr, std::move(p->writes), local_use(*p), p->sent_ps, now});
  }
  q.written_back.notify(sc_core::SC_ZERO_TIME);
  if (p->completion) {
    // Its children are idle until the next instruction: their state is final for now.
    if (!is_leaf_ && !is_root_) ctx_.tree->update_below_digest(p->tree_node);
    if (is_root_) {
      ctx_.spans[ctx_.done.done].end_ps = now;
      ++ctx_.done.done;
      ctx_.done.picoseconds = now;
      if (ctx_.progress) ctx_.progress(ctx_.done);
      if (ctx_.retired) ctx_.retired(ctx_.done.done - 1, memory().view());
    }
    if (--p->completion->remaining == 0) {
      p->completion->finished = sc_core::sc_time_stamp();
      p->completion->done.notify(sc_core::SC_ZERO_TIME);
    }
  }
  delete p;
}

std::string Node::describe_busy() const {
  std::string out;
  for (int s = 0; s < 5; ++s)
    if (const Piece* p = pipe_ ? pipe_->stages[s].piece : nullptr)
      out += fmt::format("{}{} stage {} holds piece {} of {} of instruction `{}`",
                         out.empty() ? "" : "; ", ctx_.tree->path(p->tree_node), kStageName[s],
                         p->index + 1, p->count, instruction_text(*p->op, *p->instr));
  return out;
}

}  // namespace fracsim::sim
