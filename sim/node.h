// A node of the fractal machine: a controller with the 5-stage pipeline ID -> LD -> EX -> RD ->
// WB (one SC_METHOD per stage, joined by bounded queues), a local memory (a TLM target) holding
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
// Stages are state machines run by SC_METHOD processes rather than SC_THREADs: a thread costs
// a coroutine stack (a memory mapping, a guard page, page faults), and a folded run of
// thousands of leaves starts dozens of nodes. Each stage keeps the piece it holds and the step
// it is at; where a thread would wait, the stage sets its method's next trigger and returns.
// The queues between stages behave as sc_fifo does (a piece written in one delta cycle can be
// read from the next), so the order of events is that of the threads they replace.
//
// Time advances per stage and per transfer, never per clock tick.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/extension.h"
#include "isa/key_map.h"
#include "isa/reference.h"
#include "sim/dma_engine.h"
#include "sim/instruction_plan.h"
#include "sim/leaf_unit.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/machine_tree.h"
#include "sim/memory.h"
#include "sim/node_stats.h"
#include "sim/time_step_end.h"
#include "sim/trace.h"

namespace fracsim::sim {

// Counts outstanding instructions; the waiter is woken by `done`.
struct Completion {
  int64_t remaining = 0;
  sc_core::sc_event done;
  sc_core::sc_time finished;  // when `remaining` reached 0
};

// A parent's piece still running when a later piece that reads or writes what it touches
// issued its children's instructions (LevelSpec::prefetch): their loads of what it writes
// (`outs`) wait until `computed`, set at the end of its RD; their write-backs over what it
// reads or writes until `done`, set when its write-back's data has left. Views of the
// parent's memory.
struct Settle {
  std::vector<isa::TensorRef> outs, reads;
  // Its outputs are complete in the node's memory (its children and LFU are done: RD has
  // finished), which is all a reader of them waits for; a writer over what it writes or reads
  // also waits for its write-back to have read them (its data has left: done).
  bool computed = false, done = false;
  uint64_t computed_ps = 0, ps = 0;  // when it was computed, done
  sc_core::sc_event computed_event, event;
};

// A job's relation to one of them, by operand, so that the children of one class (which differ
// by their operands' offsets) relate to it alike: the operands it reads that meet `outs`
// (bit per operand), and whether what it writes meets `outs` or `reads`.
struct After {
  std::shared_ptr<const Settle> settle;
  uint64_t reads = 0;
  bool writes = false;
  bool operator==(const After& o) const {
    return settle == o.settle && reads == o.reads && writes == o.writes;
  }
};

// The broadcasts of one dispatch over a shared medium (link.multicast): the children's first
// loads start together; those taking part first move the broadcast bytes (each group's leader
// reads them from the parent's memory once, for all its group), wait until every broadcast of
// the round has arrived, then load their own bytes.
struct BroadcastRound {
  int64_t pending = 0;  // leading classes whose broadcast has not arrived yet
  sc_core::sc_event done;
};

// A child's part in a round: per static request of its plan, 0 it loads it itself, 1 it leads
// the group of children loading that view (reads it once for all), 2 it receives it.
struct Broadcast {
  enum Role : uint8_t { kOwn = 0, kLead = 1, kReceive = 2 };
  std::vector<uint8_t> role;
  BroadcastRound* round = nullptr;
  uint64_t lead_copies = 1;  // groups the simulated child leads (the members of its class)
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
  int route = 0;        // the parent's memory among those the level's Interconnect reaches
  uint32_t layer = 0;   // the layer (RunResult::layers) of the program instruction it serves
  uint64_t weight = 1;  // tree nodes it stands for in all: copies times the parent's weight
  std::shared_ptr<const Broadcast> broadcast;  // its part in the parent's broadcasts, if any
  // The cyclic sub-block its first piece takes: 0, or where the node's rotation stands when the
  // job follows one still draining (LevelSpec::overlap).
  int first_subblock = 0;
  // The parent's pieces, unfinished when it was issued, whose memory it may read or write.
  std::vector<After> after = {};
  // Its last group keeps its output tile here, not written back: the parent's next piece
  // continues it (LevelSpec::hold_partial_sums).
  bool hold_out = false;
  // The sub-block of its first group's accumulator; -1: first_subblock's. Another where it
  // continues the tile its previous job kept (continues_tile: SegmentLayout::out_hit beside
  // that job), or where the last group of the job before, still draining, accumulates in
  // first_subblock's.
  int first_accumulator = -1;
  bool continues_tile = false;
  // Its reads wait for the parent's pieces (`after`), not for what its own earlier
  // instructions, still running, write there (Piece::parent_orders).
  bool parent_orders = false;
};
class Node;

// Children of one dispatch that behave alike: members[0] is simulated, its plan and layout those
// of every member (child indices).
struct ChildClass {
  std::vector<int> members;
  std::shared_ptr<const InstructionPlan> plan;
  SegmentLayout layout;
};

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
  const isa::CostModel* model = nullptr;  // the decomposition policy's
  bool functional = false;
  bool fold = false;
  TraceRecorder* trace = nullptr;
  // Where stages wait for the end of their time step before a decision (Node::at_step_end).
  TimeStepEnd* step_end = nullptr;
  std::function<void(const Progress&)> progress;
  std::function<void(size_t, isa::MemoryView)> retired;  // SimOptions::retired
  // Folding: per level, the simulated nodes free to play a node of that level.
  std::vector<std::set<Node*, ByPort>> pools;
  // Plans made so far, per level and congruence key, with the instruction each was made for:
  // a congruent instruction's plan is a translation of it.
  std::vector<isa::KeyMap<std::pair<isa::Instruction, std::shared_ptr<const InstructionPlan>>>>
      plans;
  Progress done;
  // Per-layer tallies (RunResult::layers) and the root's instruction spans.
  std::vector<LayerTally> layers;
  std::vector<InstructionSpan> spans;
  size_t started = 0;  // program instructions the root has begun decoding
  std::vector<uint64_t> simulated_pieces;  // RunResult::simulated_pieces
  // Leaf work of each distinct piece (op, attributes, dtypes, shapes decide it).
  isa::KeyMap<std::vector<isa::UnitWork>> unit_work;
  std::exception_ptr error;  // the first error raised inside a process; the run stops on it
};

// A bounded queue between two stages, read and written by SC_METHODs as an sc_fifo is by
// threads: an item written in one delta cycle is readable from the next one; a full queue
// refuses a write until an item has been read.
template <typename T>
class StageQueue {
 public:
  explicit StageQueue(size_t capacity) : capacity_(capacity) {}
  bool can_write() const { return items_.size() < capacity_; }
  void write(T item) {
    // Written before the run (the root's program): readable from the start.
    items_.push_back(
        {std::move(item), sc_core::sc_is_running() ? sc_core::sc_delta_count() : kBeforeRun});
    written_.notify(sc_core::SC_ZERO_TIME);
  }
  bool can_read() const {
    return !items_.empty() && items_.front().second != sc_core::sc_delta_count();
  }
  T read() {
    T item = std::move(items_.front().first);
    items_.pop_front();
    read_.notify(sc_core::SC_ZERO_TIME);
    return item;
  }
  // From an SC_METHOD: reads the next item into `item`, or, when there is none yet, sets the
  // method's next trigger and returns false.
  bool take(T& item) {
    if (!can_read()) {
      sc_core::next_trigger(written_);
      return false;
    }
    item = read();
    return true;
  }
  // From an SC_METHOD: writes `item`, or, while the queue is full, sets the method's next
  // trigger and returns false.
  bool put(const T& item) {
    if (!can_write()) {
      sc_core::next_trigger(read_);
      return false;
    }
    write(item);
    return true;
  }

 private:
  static constexpr sc_dt::uint64 kBeforeRun = ~sc_dt::uint64{0};
  size_t capacity_;
  std::deque<std::pair<T, sc_dt::uint64>> items_;  // with the delta it was written in
  sc_core::sc_event written_, read_;
};

class Node : public sc_core::sc_module {
 public:
  // level -1 is the root. `cyclic_base` is where the root's cyclic segment starts in the main
  // memory (the program lies below it); other nodes place theirs per instruction.
  Node(const sc_core::sc_module_name& name, const MachineSpec& spec, int level,
       uint64_t cyclic_base, RunContext& ctx);
  ~Node() override;

  void add_child(Node* child) { children_.push_back(child); }
  // Folding: this node's memory is port `port` of the Interconnect below it.
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }
  // Hands an instruction to this node (from the parent's EX stage, or before the run for the
  // root, which queues the whole program; below the root a node gets one instruction at a
  // time, the next when this one has written back, or, with LevelSpec::overlap, when the
  // parent's next piece can run beside it).
  void submit(Job job);

  int level() const { return level_; }
  uint64_t period_ps() const { return period_ps_; }
  Memory& memory() { return *memory_; }
  DmaEngine& dma() { return *dma_; }
  // What each stage is holding, for the error of a run that stops making progress.
  std::string describe_busy() const;

  struct Piece;
  struct Pipeline;
  struct Dispatch;

 private:
  // Makes the stage processes and the queues between them. A folded run builds pools larger
  // than it turns out to need (the MLP on 4096 leaves leaves 16 of 42 pool nodes idle), so a
  // node's pipeline is made at its first instruction rather than at elaboration.
  void start();
  // One run of a stage's process: moves its state machine on until it has to wait.
  void id_step();
  void ld_step();
  void ex_step();
  void rd_step();
  void wb_step();
  // Retires the pieces whose posted write-backs have landed (Pipeline::landing), in order.
  void land_step();
  // Whether WB posts write-backs (LinkSpec::posted_writes; not at the root): the WB stage moves
  // on once a piece's data has left; the piece retires when it lands, a latency later.
  bool posts_writes() const;
  // What a piece's data leaving frees here: its sub-block and its claim on an accumulator.
  void release_local(Piece& p);
  // The piece's write-back has landed: the oldest in flight retires (release_local first if
  // its data had not left before), and its instruction completes after its last piece.
  void retire(Piece* p);
  // Runs a stage step; an exception stops the simulation and is rethrown by the machine.
  template <typename Step>
  void guarded(Step&& step);
  // Sets the running stage's next trigger to `cycles` from now; false when there is nothing to
  // wait for (0 cycles).
  bool wait_cycles(uint64_t cycles);
  uint64_t cycles_since(const sc_core::sc_time& t0) const;
  // Piece `index` of the current plan in sub-block `subblock`; with resident partial sums its
  // out tiles lie in the accumulator of sub-block `accumulator`.
  Piece* make_piece(const isa::OpDef& op, size_t index, int subblock, int accumulator);
  // LD's and WB's DMA batch of a piece (nothing at the root, whose operands are in its own
  // memory): begin_batch() starts it; batch_done() moves it on and, when it has ended, sets
  // `cycles`, copies the data in functional mode and, after a load, invalidates what the
  // children's permutation tables hold of the tiles loaded. `requested_ps`: when the batch
  // could be requested (DmaEngine::begin); `latency` false: its data phase alone (a posted
  // write, whose latency runs after it).
  void begin_batch(DmaEngine::Channel channel, const Piece& p,
                   const std::vector<isa::Transfer>& transfers, uint64_t requested_ps = UINT64_MAX,
                   bool latency = true);
  bool batch_done(DmaEngine::Channel channel, const std::vector<isa::Transfer>& transfers,
                  uint64_t& cycles);
  // A load's transfers have arrived: copies the data (functional mode) and invalidates what the
  // children's permutation tables hold of the tiles.
  void loaded(const std::vector<isa::Transfer>& transfers);
  // Whether `p`'s loads overwrite local memory that an earlier piece in flight still uses
  // (its tiles and scratch).
  bool overwrites_earlier(const Piece& p) const;
  // Whether `p`'s out tiles lie over memory that an earlier piece in flight, placed as a
  // drained node would place it, still uses: at a leaf its out tiles (what it reads it has read
  // once `p` executes: the unit runs them in order), at an inner node its tiles and scratch
  // (its children may still load them when `p`'s children write back).
  bool outputs_overwrite_earlier(const Piece& p) const;
  // Where `p`'s loads land here; what `p` uses here (its tiles and scratch).
  static std::vector<std::pair<uint64_t, uint64_t>> local_loads(const Piece& p);
  static std::vector<std::pair<uint64_t, uint64_t>> local_use(const Piece& p);
  // When `p`'s load could be requested on a pipelined link (LinkSpec::pipelined): once it was
  // queued for LD and the earlier pieces it waits for were written back; UINT64_MAX (the whole
  // latency) on a link that is not pipelined.
  // `reads`, `operands` and `lands`: what the load reads in the parent's memory, its operands'
  // bits and where it lands here (a prefetched part of a piece's load: that part's).
  uint64_t load_requested(const Piece& p, const std::vector<isa::TensorRef>& reads,
                          uint64_t operands,
                          const std::vector<std::pair<uint64_t, uint64_t>>& lands) const;
  // Whether an earlier piece in flight here writes what `views` read, or (LevelSpec::prefetch)
  // an unfinished piece of the parent's writes what operands `operands` (a bit per operand)
  // read; if so, the event to wait for.
  const sc_core::sc_event* held_back(const Piece& p, const std::vector<isa::TensorRef>& views,
                                     uint64_t operands) const;
  // Per child instruction of `p` (child: the children's MachineTree nodes), whether it keeps
  // its output tile for the next piece (LevelSpec::hold_partial_sums).
  std::vector<char> holds_for(const Piece& p, const std::vector<size_t>& child);
  // A child's static input that its instruction does not read (StaticUse::room) is loaded all
  // the same where this node holds valid bytes of it for the piece `p`: its static segment
  // loaded it, or it is the root (the main memory); then the child's next instruction, which
  // reads it, finds it.
  void loaded_here(const Piece& p, const InstructionPlan& plan,
                   std::vector<StaticRequest>& requests) const;
  // The earlier pieces in flight here, not yet retired, whose outputs `p`'s children read or
  // write, or whose inputs they write; per child instruction, its relation to each.
  std::vector<std::vector<After>> settles_for(const Piece& p);
  void trace(int stage, const Piece& p, const sc_core::sc_time& t0);
  void trace(int stage, const Piece& p, const sc_core::sc_time& t0, const sc_core::sc_time& t1);
  // After an instruction's last write-back (WB): its plan's finalize work on the parent's
  // memory, one step at a time; true when all of it is done.
  bool finalize_step(Piece& p);
  NodeStats& stats() { return ctx_.tree->stats(tree_node_); }
  // Adds `v` to counter `c` of the node being played and to the layer's tally of this level,
  // `weight` times (the tree nodes the simulated node stands for).
  void count(Counter c, uint64_t v, uint32_t layer, uint64_t weight);
  template <typename P>
  void count(const P& p, Counter c, uint64_t v) {
    count(c, v, p.layer, p.weight);
  }
  // A leaf's unit work for one piece (cached per distinct piece).
  void count_unit_work(const isa::OpDef& op, const isa::Instruction& instr, uint32_t layer,
                       uint64_t weight);
  // The children's permutation tables hold copies of this node's memory: drop what a write to
  // [begin, end) of it makes stale.
  void invalidate_children(uint64_t begin, uint64_t end);
  // EX of an inner node (node_dispatch.cpp): the children's instructions, folded when allowed,
  // handed to the children; dispatch_end() after they have all finished (the oldest dispatch
  // outstanding). With LevelSpec::overlap below, dispatch_beside() issues a piece's
  // instructions while earlier ones are outstanding, when they can run beside them (false:
  // they cannot yet, nothing issued).
  void dispatch(const Piece& p);
  bool dispatch_beside(const Piece& p);
  // Whether two children's layouts make them run their instructions alike: equal, or, when the
  // children are leaves, equal in what their timing reads (hits and the kept output: a leaf's
  // loads, unit and write-backs take the same time wherever its tiles lie). Inner children
  // must match exactly, as their own children's tables are keyed by these addresses.
  bool alike_layouts(const SegmentLayout& a, const SegmentLayout& b) const;
  // Whether the children keep whole outputs and read later inputs from them (an inner level
  // with LevelSpec::keep_outputs: InstructionPlan::kept_out, ResidentInput).
  bool below_keeps_whole_outputs() const;
  bool leaves_below() const { return level_ + 2 == static_cast<int>(ctx_.spec->levels.size()); }
  // The part of a child's layout that alike_layouts compares, for keys.
  void append_alike_layout(std::vector<int64_t>& key, const SegmentLayout& layout) const;
  // For a stage about to decide on state that other processes may change later in the same
  // time step (their order within it is the kernel's, which folding changes): false, with the
  // stage's next trigger set, until the time step has settled (TimeStepEnd); then true for
  // the rest of the time step.
  bool at_step_end(int stage);
  void dispatch_end(const Piece& p);
  // `run`: the child's instruction is one of a run (NodeShape::run): this node's piece is one
  // of several (runs_below).
  NodeShape child_shape(size_t child, bool run) const;
  std::vector<std::shared_ptr<const Broadcast>> plan_broadcasts(
      const isa::OpDef& op, const std::vector<isa::Instruction>& instrs,
      const std::vector<size_t>& child, std::vector<ChildClass>& classes,
      const std::vector<SegmentLayout>& layouts, bool run);
  // The plan of a child's instruction (cached by congruence and `run`, so usually a
  // translation).
  std::shared_ptr<const InstructionPlan> child_plan(const isa::OpDef& op,
                                                    const isa::Instruction& instr, size_t child,
                                                    bool run);
  // The plan of its congruence class (planned now if it is the first), with the instruction it
  // was made for: what a translation does not change (pieces' shapes, sub-block sizes) is read
  // there without one.
  const std::pair<isa::Instruction, std::shared_ptr<const InstructionPlan>>& class_entry(
      const isa::OpDef& op, const isa::Instruction& instr, size_t child, bool run);

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
  int accumulator_ = 0;  // resident partial sums: the current group's sub-block
  int first_accumulator_ = 0;  // the job's first group's (Job::first_subblock)

  // The job being decoded.
  size_t tree_node_ = 0;
  uint64_t copies_ = 1;
  int route_ = 0;
  uint32_t layer_ = 0;
  uint64_t weight_ = 1;
  int port_ = 0;
  SegmentLayout layout_;
  std::shared_ptr<const InstructionPlan> plan_;
  std::shared_ptr<const Broadcast> broadcast_;
  std::vector<After> after_;
  bool parent_orders_ = false;
  bool hold_out_ = false;
  bool takes_over_ = false;  // the job's first group continues a held accumulator
  // Per child: where its last instruction kept its output tile without writing it back (its
  // cyclic segment and the accumulator's sub-block), which the next dispatch must continue.
  std::vector<std::optional<std::pair<uint64_t, int>>> held_tiles_;

  std::unique_ptr<Pipeline> pipe_;  // null until the first instruction
};

}  // namespace fracsim::sim
