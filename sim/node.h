// A node of the fractal machine: a controller with the 5-stage pipeline ID -> LD -> EX -> RD ->
// WB (one SC_THREAD per stage, joined by bounded FIFOs), a local memory (a TLM target) holding
// a static segment and a cyclic segment of N sub-blocks (one per sub-instruction in flight), a
// DMA engine bound to the parent's memory with a read channel (LD) and a write channel (WB), an
// LFU, and either children (FFUs) or, at a leaf, a compute unit. The root node's memory is the
// machine's main memory: it loads nothing and keeps no static segment.
//
// A Node is a simulated node. It plays one node of the MachineTree per instruction (always the
// same one unless folding): counters and the tensor permutation table live in the tree.
// Folding (node_dispatch.cpp): the EX stage groups the children's instructions into classes
// that behave alike, sends each class to one simulated child, and copies the result to the
// rest.
//
// Time advances per stage and per transfer, never per clock tick.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/reference.h"
#include "sim/dma_engine.h"
#include "sim/instruction_plan.h"
#include "sim/leaf_unit.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/machine_tree.h"
#include "sim/memory.h"
#include "sim/node_stats.h"
#include "sim/trace.h"

namespace fracsim::sim {

// Counts outstanding instructions; the waiter sleeps on `done`.
struct Completion {
  int64_t remaining = 0;
  sc_core::sc_event done{"done"};  // named: cheaper for SystemC to build (see Node::Node)
};

// An instruction handed to a node, with the plan its parent made for it (the root plans its
// own: `plan` is null there).
struct Job {
  isa::Instruction instr;
  std::shared_ptr<const InstructionPlan> plan;
  SegmentLayout layout;  // where the static operands and the cyclic segment are
  size_t tree_node = 0;  // the MachineTree node this job runs as
  uint64_t copies = 1;   // identical nodes it stands for (folding)
  Completion* completion = nullptr;
  int route = 0;  // the parent's memory among those the level's Interconnect reaches
};
// sc_fifo prints its contents when asked; a job prints as its opcode.
std::ostream& operator<<(std::ostream& os, const Job& job);

class Node;

// A folded run needed more simulated nodes at a level at once than its pool holds; simulate()
// starts again with every pool as large as its level.
struct FoldPoolExhausted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Shared by every node of one run.
// Orders simulated nodes by their port on their level's interconnect, lowest first.
struct ByPort {
  bool operator()(const Node* a, const Node* b) const;
};

struct RunContext {
  const isa::OpTable* ops = nullptr;
  const MachineSpec* spec = nullptr;
  MachineTree* tree = nullptr;
  bool functional = false;
  bool fold = false;
  TraceRecorder* trace = nullptr;
  std::function<void(const Progress&)> progress;
  // Folding: per level, the simulated nodes free to play a node of that level.
  std::vector<std::set<Node*, ByPort>> pools;
  // Plans made so far, per level and congruence key, with the instruction each was made for:
  // a congruent instruction's plan is a translation of it.
  std::vector<std::map<std::vector<int64_t>,
                       std::pair<isa::Instruction, std::shared_ptr<const InstructionPlan>>>>
      plans;
  Progress done;
  std::exception_ptr error;  // the first error raised inside a process; the run stops on it
};

class Node : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Node);

  // level -1 is the root. `cyclic_base` is where the root's cyclic segment starts in the main
  // memory (the program lies below it); other nodes place theirs per instruction.
  Node(const sc_core::sc_module_name& name, const MachineSpec& spec, int level,
       uint64_t cyclic_base, RunContext& ctx);
  ~Node() override;

  void add_child(Node* child) { children_.push_back(child); }
  // Folding: this node's memory is port `port` of the Interconnect below it.
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }
  // Hands an instruction to this node (from the parent's EX stage, or the program driver).
  void submit(Job job) {
    if (!started_) start();
    inbox_.write(std::move(job));
  }

  int level() const { return level_; }
  uint64_t period_ps() const { return period_ps_; }
  Memory& memory() { return *memory_; }
  DmaEngine& dma() { return *dma_; }
  // What each stage is holding, for the error of a run that stops making progress.
  std::string describe_busy() const;

 private:
  struct Piece;

  // Spawns the stage threads. A folded run builds pools larger than it turns out to need (the
  // MLP on 4096 leaves leaves 16 of 42 pool nodes idle), and a thread costs its coroutine stack
  // (an mmap, a guard page, page faults), so a node's threads are made at its first
  // instruction rather than at elaboration.
  void start();
  void id_stage();
  void ld_stage();
  void ex_stage();
  void rd_stage();
  void wb_stage();
  // Runs a stage body; an exception stops the simulation and is rethrown by the machine.
  template <typename Body>
  void guarded(Body&& body);
  void wait_cycles(uint64_t cycles);
  uint64_t cycles_since(const sc_core::sc_time& t0) const;
  Piece* make_piece(const isa::OpDef& op, const isa::Instruction& part, int subblock, bool first);
  void trace(int stage, const Piece& p, const sc_core::sc_time& t0);
  // After an instruction's last write-back: its plan's finalize work on the parent's memory.
  void run_finalize(const isa::Instruction& f, const Piece& p);
  NodeStats& stats() { return ctx_.tree->stats(tree_node_); }
  // The children's permutation tables hold copies of this node's memory: drop what a write to
  // [begin, end) of it makes stale.
  void invalidate_children(uint64_t begin, uint64_t end);
  // EX of an inner node (node_dispatch.cpp): the children's instructions, folded when allowed.
  void dispatch(const isa::OpDef& op, const std::vector<isa::Instruction>& instrs,
                const std::vector<std::pair<uint64_t, uint64_t>>& local_writes);
  NodeShape child_shape(size_t child) const;
  // The plan of a child's instruction (cached by congruence, so usually a translation).
  std::shared_ptr<const InstructionPlan> child_plan(const isa::OpDef& op,
                                                    const isa::Instruction& instr, size_t child);

  int level_;
  bool is_root_, is_leaf_;
  RunContext& ctx_;
  std::vector<Node*> children_;  // simulated children (unfolded runs; folded ones use pools)
  std::unique_ptr<LeafUnit> unit_;
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<DmaEngine> dma_;
  ControllerSpec controller_;
  uint64_t period_ps_;
  int fanout_;
  uint64_t root_cyclic_base_, root_subblock_ = 0;
  int next_subblock_ = 0;
  bool started_ = false;

  // The job being decoded (non-root nodes run one instruction at a time: the parent sends the
  // next only when this one has written back).
  size_t tree_node_ = 0;
  uint64_t copies_ = 1;
  int route_ = 0;
  int port_ = 0;
  SegmentLayout layout_;
  std::shared_ptr<const InstructionPlan> plan_;

  sc_core::sc_fifo<Job> inbox_;
  sc_core::sc_fifo<Piece*> to_ld_, to_ex_, to_rd_, to_wb_;
  sc_core::sc_semaphore subblocks_;
  std::deque<Piece*> in_flight_;  // past ID, not yet written back, in order
  sc_core::sc_event written_back_;
  Completion children_done_;
  std::array<const Piece*, 5> holding_{};  // per stage, for describe_busy
};

}  // namespace fracsim::sim
