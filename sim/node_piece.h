// The pieces a Node's stages pass along, and the stage numbering (node.cpp, node_lfu.cpp and
// node_dispatch.cpp share them; nothing outside Node includes this).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "sim/node.h"

namespace fracsim::sim {

// Whether any of the byte ranges [first, second) of `a` meets one of `b`.
inline bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>>& a,
                     const std::vector<std::pair<uint64_t, uint64_t>>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.first < y.second && y.first < x.second) return true;
  return false;
}

// Whether a view of `a` shares a byte with one of `b` (`hazards: tiles`), or their byte spans
// meet (`spans`).
inline bool views_meet(const std::vector<isa::TensorRef>& a, const std::vector<isa::TensorRef>& b,
                       HazardCheck check) {
  for (const isa::TensorRef& x : a)
    for (const isa::TensorRef& y : b)
      if (check == HazardCheck::tiles ? isa::views_overlap(x, y)
                                      : overlaps({x.byte_span()}, {y.byte_span()}))
        return true;
  return false;
}

// An operand's bit in a mask of operands (Piece::read_operands, After::reads); an op with more
// than 64 operands gives the 64th and later one bit, which only makes prefetch wait more.
inline uint64_t operand_bit(size_t o) { return uint64_t{1} << std::min<size_t>(o, 63); }

enum Stage { kId, kLd, kEx, kRd, kWb };
constexpr const char* kStageName[] = {"ID", "LD", "EX", "RD", "WB"};

struct Node::Piece {
  const isa::OpDef* op = nullptr;
  std::shared_ptr<const isa::Instruction> instr;  // the instruction this piece belongs to
  isa::Instruction part;                          // the piece, operands in the parent's memory
  isa::Instruction local;                         // the piece, operands in this node's memory
  std::vector<isa::Transfer> loads, stores;
  // Static tiles of the first piece moved by broadcast (link.multicast): all of them, those
  // this node reads for its group, and the bytes it receives from another's read.
  std::shared_ptr<const Broadcast> broadcast;
  std::vector<isa::Transfer> shared, lead;
  uint64_t received_bytes = 0;
  isa::ParallelSplit split;  // children's instructions and LFU work (not at a leaf)
  std::vector<isa::TensorRef> reads, writes;  // views in the parent's memory
  std::vector<std::pair<uint64_t, uint64_t>> local_writes;   // out tiles and scratch, here
  std::vector<isa::TensorRef> local_outs;                    // the out tiles' views, here
  std::pair<uint64_t, uint64_t> scratch{0, 0};               // the children's partial results
  size_t index = 0, count = 1;
  size_t tree_node = 0;
  uint64_t copies = 1;
  int route = 0;
  uint32_t layer = 0;  // as the job's (Job::layer, Job::weight)
  uint64_t weight = 1;
  Completion* completion = nullptr;        // set on the last piece of an instruction
  std::vector<isa::Instruction> finalize;  // the last piece: the plan's finalize work
  // Resident partial sums: the sub-block whose accumulator holds its out tiles (-1: none),
  // whether they stay there for the next piece (nothing written back), whether it continues
  // the previous piece's (nothing of them loaded; its EX starts after that piece's RD), and
  // whether its RD has combined its children's partial results.
  int accumulator = -1;
  uint64_t accumulator_at = 0;  // its address
  bool holds_output = false, continues = false, reduced = false;
  uint64_t reduced_ps = 0;  // when RD finished it
  // The job's last piece keeps its tile for the parent's next piece (Job::hold_out), yet
  // releases its claim on the accumulator as a group's last piece does; the job's first piece
  // continues such a tile (Job::first_accumulator), as `continues` does within a job.
  bool held_across = false, takes_over = false;
  std::shared_ptr<const InstructionPlan> plan;  // the job's
  uint64_t queued_ps = 0;  // when it entered the queue of the stage it is at or waits for
  // LevelSpec::prefetch: the parent's unfinished pieces whose memory it may use (its job's);
  // its loads moved ahead of a hazard, once split off; and, when a later piece's children
  // were issued before it has retired, what they wait for.
  std::vector<After> after;
  // Job::parent_orders: what an earlier instruction here writes and this piece reads is
  // ordered by `after` (the parent's pieces, whose outputs hold it), not by that instruction's
  // write-backs. A parent sets it when its children, issued beside their earlier instructions,
  // relate to them differently (child i reads what child j wrote): they then wait alike, so
  // that children alike in all else run as one in a folded run.
  bool parent_orders = false;
  // Whether a hazard on what a piece of `earlier` (its instruction) writes is this node's to
  // keep: not when the parent orders it (parent_orders, another instruction).
  bool orders_after(const std::shared_ptr<const isa::Instruction>& earlier) const {
    return !parent_orders || earlier == instr;
  }
  std::vector<isa::Transfer> early;
  std::vector<int> load_operands;  // the operand of each of `loads`
  uint64_t read_operands = 0;      // a bit per operand in `reads`
  bool split_loads = false;
  std::shared_ptr<Settle> settle;
  // Its write-back's data has left (a posted write, LinkSpec::posted_writes): its
  // sub-block and accumulator are free; it retires when the data lands in the parent's memory.
  bool sent = false;
  uint64_t sent_ps = 0;
};

// What a child's instruction occupies in the child's memory while it runs, so that the next
// one can be placed beside it (LevelSpec::overlap).
struct ChildRun {
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // its static tiles and cyclic segment
  uint64_t ring = 0, ring_bytes = 0;                // its cyclic segment
  int first = 0;                                    // the sub-block its first piece takes
  int accumulator = 0;                              // its first group's accumulator
  int last_accumulator = -1;                        // its last group's; -1: none
  size_t pieces = 0;
};

// The children's instructions of one piece, from dispatch() to dispatch_end().
struct Node::Dispatch {
  const Piece* piece = nullptr;
  sc_core::sc_time start;  // when they were issued
  Completion children;
  BroadcastRound broadcast_round;  // the children's broadcasts
  // The classes as issued (members[0] simulated, its plan and layout those of every member)
  // and the simulated children running them.
  std::vector<ChildClass> classes;
  std::vector<Node*> runners;
  std::vector<ChildRun> runs;  // per child (with LevelSpec::overlap below)
  // Per child, where its tiles and cyclic segment are in its memory: a class's members may
  // place them differently when they are leaves (Node::alike_layouts).
  std::vector<SegmentLayout> layouts;
};

// What a started node needs while it runs: the queues between the stages, the sub-block
// semaphore, and each stage's state. Made during the run (Node::start), where SystemC builds
// unnamed events cheaply.
struct Node::Pipeline {
  explicit Pipeline(int depth)
      : inbox(SIZE_MAX),
        to_ld(depth),
        to_ex(depth),
        to_rd(depth),
        to_wb(depth),
        free_subblocks(depth) {}

  StageQueue<Job> inbox;  // the root's holds the program; below it, one job at a time
  StageQueue<Piece*> to_ld, to_ex, to_rd, to_wb;
  int free_subblocks;  // the cyclic segment's sub-blocks, a semaphore
  sc_core::sc_event subblock_freed;
  std::deque<Piece*> in_flight;  // past ID, not yet written back, in order
  sc_core::sc_event written_back;
  // The last pieces written back (as many as can be in flight), on a pipelined link: what
  // they wrote in the parent's memory, what they used here, when their data left (`sent_ps`:
  // `local` free) and when it landed (`ps`: `writes` readable). A load is requested once its
  // piece is queued and those of them it waits for are done.
  struct Retired {
    std::shared_ptr<const isa::Instruction> instr;  // its job's
    std::vector<isa::TensorRef> writes;
    std::vector<std::pair<uint64_t, uint64_t>> local;
    uint64_t sent_ps = 0, ps = 0;
  };
  std::deque<Retired> retired;
  size_t retired_kept = 0;  // how many `retired` keeps, at least depth: + the most ever landing
  // Pieces whose posted write-back has left and not yet landed, in order, with when each lands
  // (Node::land_step retires them then).
  std::deque<std::pair<Piece*, uint64_t>> landing;
  sc_core::sc_event land_due;
  // Where groups' partial sums are (their addresses); a held tile's twice while the group
  // continuing it has started and the held one has not retired.
  std::multiset<uint64_t> accumulators_busy;
  sc_core::sc_event reduced;           // RD has finished a piece's LFU work
  sc_core::sc_event parked;            // never notified: a stage that failed waits on it

  // Per stage: where its state machine is (step 0 takes the next piece; at ID, the next job),
  // the piece it holds (for describe_busy too) and when it started on it.
  struct Stage {
    int step = 0;
    Piece* piece = nullptr;
    sc_core::sc_time t0;
    // The time at which the stage last waited for the end of its time step (Node::at_step_end),
    // and the event that ends the wait.
    uint64_t settled_ps = UINT64_MAX;
    sc_core::sc_event step_end;
    // Hands the piece to the next stage and goes back to step 0; false (the next trigger set)
    // while the next stage's queue is full.
    bool pass_to(StageQueue<Piece*>& out) {
      if (!out.put(piece)) return false;
      piece->queued_ps = sc_core::sc_time_stamp().value();
      piece = nullptr;
      step = 0;
      return true;
    }
  };
  std::array<Stage, 5> stages;

  // ID: the job being cut into pieces.
  const isa::OpDef* op = nullptr;
  std::shared_ptr<const isa::Instruction> instr;
  Completion* completion = nullptr;
  size_t next_piece = 0;

  // EX of an inner node: its dispatches outstanding, oldest first (one at most unless the
  // children overlap). They all run one fold round, made by the first: a dispatch beside
  // others gives every class the same simulated child. `groups`: the children that the first
  // gave equal instructions, layouts and broadcast parts; a dispatch beside it must keep
  // each group alike, so that folded and unfolded runs decide alike.
  std::deque<std::unique_ptr<Dispatch>> dispatches;
  sc_core::sc_event dispatch_ended;
  MachineTree::FoldRound round;
  std::vector<std::vector<int>> groups;

  // WB: when the posted write of a piece with finalize work lands (it waits for that).
  sc_core::sc_time lands_at;
  // WB: the finalize instruction in progress and its phase.
  size_t finalize = 0;
  int finalize_step = 0;
  sc_core::sc_time finalize_t0;
  uint64_t finalize_in = 0, finalize_out = 0;
  std::pair<uint64_t, uint64_t> finalize_out_span{0, 0};
};

// Runs a stage step; an exception ends the simulation and is rethrown by the machine.
template <typename Step>
void Node::guarded(Step&& step) {
  try {
    step();
  } catch (...) {
    if (!ctx_.error) {
      ctx_.error = std::current_exception();
      // Once: other stages may fail in the same delta. Not sc_stop: a stopped kernel cannot
      // end its processes (see kill_processes).
      sc_core::sc_pause();
    }
    sc_core::next_trigger(pipe_->parked);  // this stage never runs again
  }
}

}  // namespace fracsim::sim
