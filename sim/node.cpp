#include "sim/node.h"

#include <cstdlib>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::sim {

using sc_core::sc_time;

std::ostream& operator<<(std::ostream& os, const Job& job) {
  return os << "job(opcode " << job.instr.opcode << ")";
}

NodeMemory::~NodeMemory() { std::free(data_); }

void NodeMemory::allocate(uint64_t bytes) {
  std::free(data_);
  data_ = static_cast<uint8_t*>(std::calloc(bytes, 1));
  if (!data_ && bytes > 0)
    throw ConfigError(fmt::format("cannot allocate {} bytes of host memory for a functional run",
                                  bytes));
  size_ = bytes;
}

struct Node::Piece {
  const isa::OpDef* op = nullptr;
  isa::LocalPiece local;      // the piece in this node's memory, and its transfers
  isa::ParallelSplit split;   // children's instructions and LFU work (not at a leaf)
  std::vector<std::pair<uint64_t, uint64_t>> reads, writes;  // spans in the parent's memory
  Completion* completion = nullptr;  // set on the last piece of an instruction
};

namespace {
enum Stage { kId, kLd, kEx, kRd, kWb };
constexpr const char* kStageName[] = {"ID", "LD", "EX", "RD", "WB"};

bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>>& a,
              const std::vector<std::pair<uint64_t, uint64_t>>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.first < y.second && y.first < x.second) return true;
  return false;
}

__extension__ using U128 = unsigned __int128;

uint64_t ceil_div_u128(U128 a, U128 b) {
  return static_cast<uint64_t>((a + b - 1) / b);
}
}  // namespace

Node::Node(const sc_core::sc_module_name& name, std::string path, const MachineSpec& spec,
           int level, Node* parent, uint64_t cyclic_base, RunContext& ctx)
    : sc_module(name),
      path_(std::move(path)),
      level_(level),
      is_root_(level < 0),
      is_leaf_(level >= 0 && spec.levels[level].is_leaf),
      parent_(parent),
      ctx_(ctx),
      controller_(is_root_ ? spec.root.controller : spec.levels[level].controller),
      period_ps_(1000000000000ULL / controller_.clock),
      clock_hz_(controller_.clock),
      fanout_(level + 1 < static_cast<int>(spec.levels.size()) ? spec.levels[level + 1].fanout : 1),
      cyclic_base_(cyclic_base),
      inbox_(1),
      to_ld_(controller_.pipeline_depth),
      to_ex_(controller_.pipeline_depth),
      to_rd_(controller_.pipeline_depth),
      to_wb_(controller_.pipeline_depth),
      subblocks_(controller_.pipeline_depth) {
  const MemorySpec& mem = is_root_ ? spec.root.memory : spec.levels[level].memory;
  FRACSIM_ASSERT(cyclic_base_ <= mem.capacity, "{}: cyclic base beyond capacity", path_);
  subblock_bytes_ =
      (mem.capacity - cyclic_base_) / controller_.pipeline_depth / isa::kTileAlign * isa::kTileAlign;
  if (!is_root_) {
    const LevelSpec& ls = spec.levels[level];
    const MemorySpec& pm = level == 0 ? spec.root.memory : spec.levels[level - 1].memory;
    dma_bandwidth_ = std::min(ls.link.bandwidth, pm.bandwidth);
    dma_latency_cycles_ = ceil_div_u128(ls.link.latency + pm.latency, period_ps_);
  }
  if (is_leaf_) unit_ = make_leaf_unit(spec.levels[level]);
  if (ctx_.functional) memory_.allocate(mem.capacity);
  SC_THREAD(id_stage);
  SC_THREAD(ld_stage);
  SC_THREAD(ex_stage);
  SC_THREAD(rd_stage);
  SC_THREAD(wb_stage);
}

Node::~Node() {
  for (Piece* p : in_flight_) delete p;
}

template <typename Body>
void Node::guarded(Body&& body) {
  try {
    while (true) body();
  } catch (...) {
    if (!ctx_.error) ctx_.error = std::current_exception();
    sc_core::sc_stop();
    sc_core::wait();  // park this process for good
  }
}

void Node::wait_cycles(uint64_t cycles) {
  if (cycles > 0) wait(sc_time::from_value(cycles * period_ps_));  // resolution: 1 ps
}

uint64_t Node::cycles_since(const sc_time& t0) const {
  const uint64_t ps = (sc_core::sc_time_stamp() - t0).value();  // resolution is 1 ps
  return (ps + period_ps_ - 1) / period_ps_;
}

// Latency once per piece (descriptors are pipelined), then the bytes at the slower of the link
// and the parent memory, rounded up to whole cycles.
uint64_t Node::transfer_cycles(uint64_t bytes) const {
  if (bytes == 0 || is_root_) return 0;
  return dma_latency_cycles_ +
         ceil_div_u128(static_cast<U128>(bytes) * clock_hz_, dma_bandwidth_);
}

Node::Piece* Node::make_piece(const isa::OpDef& op, const isa::Instruction& part, int subblock) {
  auto* p = new Piece;
  p->op = &op;
  const uint64_t base = cyclic_base_ + static_cast<uint64_t>(subblock) * subblock_bytes_;
  if (is_root_) {
    p->local.local = part;  // operands already live in the main memory
  } else {
    p->local = isa::localize(op, part, base);
  }
  if (!is_leaf_) {
    const uint64_t scratch = is_root_ ? base : base + p->local.bytes;
    p->split = isa::parallel(op, *ctx_.ops, p->local.local, fanout_, scratch);
    if (scratch + p->split.scratch_bytes > base + subblock_bytes_)
      throw ConfigError(fmt::format("{}: {}: partial results need {} bytes but a cyclic sub-block "
                                    "holds {}", path_, op.name, scratch - base +
                                    p->split.scratch_bytes, subblock_bytes_));
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
    ++stats_[Counter::instructions];
    std::vector<isa::Instruction> parts;
    if (is_root_) {
      parts.push_back(job.instr);
    } else {
      isa::NodeBudget budget{subblock_bytes_, is_leaf_ ? 1 : fanout_, path_};
      parts = isa::sequential(op, *ctx_.ops, job.instr, budget);
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      subblocks_.wait();
      Piece* p = make_piece(op, parts[i], next_subblock_);
      next_subblock_ = (next_subblock_ + 1) % controller_.pipeline_depth;
      if (i + 1 == parts.size()) p->completion = job.completion;
      holding_[kId] = p;
      wait_cycles(controller_.decode_cycles);
      stats_[Counter::decode_cycles] += controller_.decode_cycles;
      ++stats_[Counter::pieces];
      in_flight_.push_back(p);
      holding_[kId] = nullptr;
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
    stats_[Counter::hazard_cycles] += cycles_since(t_hazard);
    uint64_t bytes = 0;
    for (const isa::Transfer& t : p->local.loads) bytes += t.local.stored_bytes();
    const uint64_t cycles = transfer_cycles(bytes);
    wait_cycles(cycles);
    if (ctx_.functional && !is_root_) {
      isa::MemoryView from = parent_->memory().view(), to = memory_.view();
      for (const isa::Transfer& t : p->local.loads) isa::copy_tensor(t.parent, from, t.local, to);
    }
    stats_[Counter::load_cycles] += cycles;
    stats_[Counter::load_bytes] += bytes;
    holding_[kLd] = nullptr;
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
      isa::MemoryView mv = memory_.view();
      const uint64_t cycles = unit_->run(*p->op, p->local.local, ctx_.functional ? &mv : nullptr);
      const auto work = static_cast<uint64_t>(isa::instruction_work(*p->op, p->local.local));
      stats_[p->op->unit == "matrix" ? Counter::matrix_ops : Counter::vector_ops] += work;
      stats_[Counter::unit_cycles] += cycles;
      wait_cycles(cycles);
    } else {
      children_done_.remaining = static_cast<int64_t>(p->split.children.size());
      for (size_t i = 0; i < p->split.children.size(); ++i)
        children_[i]->submit(Job{p->split.children[i], &children_done_});
      while (children_done_.remaining > 0) wait(children_done_.done);
    }
    stats_[Counter::execute_cycles] += cycles_since(t0);
    holding_[kEx] = nullptr;
    to_rd_.write(p);
  });
}

void Node::rd_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_rd_.read(p);
    holding_[kRd] = p;
    uint64_t cycles = 0;
    for (const isa::Instruction& r : p->split.reductions) {
      const uint64_t elements = static_cast<uint64_t>(r.operands.back().elements());
      stats_[Counter::lfu_elements] += elements;
      cycles += (elements + controller_.lfu_throughput - 1) / controller_.lfu_throughput;
      if (ctx_.functional) isa::execute_reference(ctx_.ops->get(r.opcode), r, memory_.view());
    }
    wait_cycles(cycles);
    stats_[Counter::reduce_cycles] += cycles;
    holding_[kRd] = nullptr;
    to_wb_.write(p);
  });
}

void Node::wb_stage() {
  guarded([&] {
    Piece* p = nullptr;
    to_wb_.read(p);
    holding_[kWb] = p;
    uint64_t bytes = 0;
    for (const isa::Transfer& t : p->local.stores) bytes += t.local.stored_bytes();
    const uint64_t cycles = transfer_cycles(bytes);
    wait_cycles(cycles);
    if (ctx_.functional && !is_root_) {
      isa::MemoryView from = memory_.view(), to = parent_->memory().view();
      for (const isa::Transfer& t : p->local.stores) isa::copy_tensor(t.local, from, t.parent, to);
    }
    stats_[Counter::writeback_cycles] += cycles;
    stats_[Counter::store_bytes] += bytes;
    FRACSIM_ASSERT(!in_flight_.empty() && in_flight_.front() == p, "{}: write-back out of order",
                   path_);
    in_flight_.pop_front();
    written_back_.notify(sc_core::SC_ZERO_TIME);
    subblocks_.post();
    holding_[kWb] = nullptr;
    if (p->completion && --p->completion->remaining == 0)
      p->completion->done.notify(sc_core::SC_ZERO_TIME);
    delete p;
  });
}

std::string Node::describe_busy() const {
  std::string out;
  for (int s = 0; s < 5; ++s)
    if (holding_[s])
      out += fmt::format("{}{} stage {} holds a {} piece", out.empty() ? "" : "; ", path_,
                         kStageName[s], holding_[s]->op->name);
  return out;
}

}  // namespace fracsim::sim
