// A node of the fractal machine: a controller with the 5-stage pipeline ID -> LD -> EX -> RD ->
// WB (one SC_THREAD per stage, joined by bounded FIFOs), a local memory whose cyclic segment has
// N sub-blocks (one per sub-instruction in flight), a DMA engine to the parent's memory with a
// read channel (LD) and a write channel (WB), an LFU, and either children (FFUs) or, at a leaf,
// a compute unit. The root node's memory is the machine's main memory: it loads nothing.
//
// Time advances per stage and per transfer, never per clock tick.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/sequential.h"
#include "isa/reference.h"
#include "sim/leaf_unit.h"
#include "sim/machine_spec.h"
#include "sim/node_stats.h"

namespace fracsim::sim {

// Counts outstanding instructions; the waiter sleeps on `done`.
struct Completion {
  int64_t remaining = 0;
  sc_core::sc_event done;
};

struct Job {
  isa::Instruction instr;
  Completion* completion = nullptr;
};
// sc_fifo prints its contents when asked; a job prints as its opcode.
std::ostream& operator<<(std::ostream& os, const Job& job);

// Shared by every node of one run.
struct RunContext {
  const isa::OpTable* ops = nullptr;
  bool functional = false;
  std::exception_ptr error;  // the first error raised inside a process; the run stops on it
};

// A node's memory: storage only in functional mode (zero pages are allocated lazily).
class NodeMemory {
 public:
  NodeMemory() = default;
  NodeMemory(const NodeMemory&) = delete;
  NodeMemory& operator=(const NodeMemory&) = delete;
  ~NodeMemory();
  void allocate(uint64_t bytes);
  isa::MemoryView view() { return {data_, size_}; }
  bool allocated() const { return data_ != nullptr; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

class Node : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Node);

  // level -1 is the root. `cyclic_base` is where the cyclic segment starts in this node's memory
  // (the root's main memory holds the program below it).
  Node(const sc_core::sc_module_name& name, std::string path, const MachineSpec& spec, int level,
       Node* parent, uint64_t cyclic_base, RunContext& ctx);
  ~Node() override;

  void add_child(Node* child) { children_.push_back(child); }
  // Hands an instruction to this node (from the parent's EX stage, or the program driver).
  void submit(Job job) { inbox_.write(std::move(job)); }

  const std::string& path() const { return path_; }
  int level() const { return level_; }
  const NodeStats& stats() const { return stats_; }
  NodeMemory& memory() { return memory_; }
  uint64_t period_ps() const { return period_ps_; }
  uint64_t subblock_bytes() const { return subblock_bytes_; }
  // What each stage is holding, for the error of a run that stops making progress.
  std::string describe_busy() const;

 private:
  struct Piece;

  void id_stage();
  void ld_stage();
  void ex_stage();
  void rd_stage();
  void wb_stage();
  // Runs a stage body; an exception stops the simulation and is rethrown by the machine.
  template <typename Body>
  void guarded(Body&& body);
  void wait_cycles(uint64_t cycles);
  uint64_t transfer_cycles(uint64_t bytes) const;
  uint64_t cycles_since(const sc_core::sc_time& t0) const;
  Piece* make_piece(const isa::OpDef& op, const isa::Instruction& part, int subblock);

  std::string path_;
  int level_;
  bool is_root_, is_leaf_;
  Node* parent_;
  RunContext& ctx_;
  std::vector<Node*> children_;
  std::unique_ptr<LeafUnit> unit_;
  ControllerSpec controller_;
  uint64_t period_ps_;
  uint64_t dma_latency_cycles_ = 0;
  uint64_t dma_bandwidth_ = 0;  // bytes per second: min(link, parent memory)
  uint64_t clock_hz_;
  int fanout_;
  uint64_t cyclic_base_;
  uint64_t subblock_bytes_;
  int next_subblock_ = 0;
  NodeMemory memory_;

  sc_core::sc_fifo<Job> inbox_;
  sc_core::sc_fifo<Piece*> to_ld_, to_ex_, to_rd_, to_wb_;
  sc_core::sc_semaphore subblocks_;
  std::deque<Piece*> in_flight_;  // past ID, not yet written back, in order
  sc_core::sc_event written_back_;
  Completion children_done_;
  std::array<const Piece*, 5> holding_{};  // per stage, for describe_busy
  NodeStats stats_;
};

}  // namespace fracsim::sim
