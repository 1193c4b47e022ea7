#include "sim/machine.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/interconnect.h"
#include "sim/node.h"
#include "sim/units.h"

namespace fracsim::sim {
namespace {

// The SystemC kernel of one run, current while it lives: each run gets a kernel of its own, so
// that one process can run many simulations. The kernel that was current before comes back
// when it goes. Declared before the run's modules, which must go first (they deregister from it).
class Kernel {
 public:
  Kernel()
      : previous_(sc_core::sc_get_curr_simcontext()),
        previous_default_(sc_core::sc_default_global_context),
        own_(std::make_unique<sc_core::sc_simcontext>()) {
    sc_core::sc_curr_simcontext = own_.get();
    sc_core::sc_default_global_context = own_.get();
  }
  ~Kernel() {
    sc_core::sc_curr_simcontext = previous_;
    sc_core::sc_default_global_context = previous_default_;
  }
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

 private:
  sc_core::sc_simcontext* previous_;
  sc_core::sc_simcontext* previous_default_;
  std::unique_ptr<sc_core::sc_simcontext> own_;
};

// Kills every process of the current kernel, which then frees them. SystemC frees a process
// spawned during the simulation (the nodes' and the memories') only once it has ended, not
// with its kernel, and a method process ends only when killed. Runs before the modules go: a
// process leaves the events it waits on (the modules') when it ends. A kernel that never
// started owns its processes and frees them itself; one that stopped cannot kill them, so no
// run calls sc_stop (an error pauses the kernel instead).
void kill_processes() {
  if (!sc_core::sc_is_running()) return;
  std::vector<sc_core::sc_process_handle> processes;
  std::vector<sc_core::sc_object*> objects = sc_core::sc_get_top_level_objects();
  while (!objects.empty()) {
    sc_core::sc_object* o = objects.back();
    objects.pop_back();
    sc_core::sc_process_handle h(o);
    if (h.valid()) processes.push_back(h);
    const std::vector<sc_core::sc_object*>& children = o->get_child_objects();
    objects.insert(objects.end(), children.begin(), children.end());
  }
  for (sc_core::sc_process_handle& h : processes) h.kill();
}  // the last handle of a killed process frees it

// Host bytes per node of the machine (the tree's index and per-node vectors) and per simulated
// node (a Node's SystemC modules, processes, queues and its slot in the tree): the peak
// resident memory of unfolded timing runs of the MLP on configs/scale, less that of the 1-leaf
// machine, over the nodes added, is 40-48 KiB per node; counted as 64 KiB. And the copies of
// the program's footprint a level's memories are counted for in functional mode.
constexpr uint64_t kBytesPerNode = 64;
constexpr uint64_t kBytesPerSimulatedNode = 64 * 1024;
constexpr uint64_t kLevelFootprints = 2;
// Functional mode: the root memory's bytes, the result, the reference run's and the instruction
// check's (InstructionChecker).
constexpr uint64_t kFootprintCopies = 4;

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t saturating_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// An estimate's text: rounded up to a whole KiB, or MiB from 1 MiB up.
std::string approximate_bytes(uint64_t bytes) {
  const uint64_t unit = bytes >= (uint64_t{1} << 20) ? uint64_t{1} << 20 : uint64_t{1} << 10;
  return format_quantity(saturating_mul(bytes / unit + (bytes % unit != 0), unit),
                         QuantityKind::bytes);
}

// Refuses a run whose estimate exceeds the limit, before any of it is built.
// `restart`: the folded run outgrew its first pools and would restart with every node.
void check_host_memory(const MachineSpec& spec, const isa::Program& program, Mode mode,
                       int64_t simulated_nodes, uint64_t limit, bool restart) {
  if (limit == 0) return;
  const HostMemoryEstimate e = host_memory_estimate(spec, program, mode, simulated_nodes);
  if (e.bytes <= limit) return;
  std::string parts = fmt::format("{} nodes, {} of them simulated", e.nodes, e.simulated_nodes);
  if (mode == Mode::functional)
    parts +=
        fmt::format(", {} of node memories, {} for the program's footprint",
                    approximate_bytes(e.node_memory_bytes), approximate_bytes(e.program_bytes));
  if (restart) parts += "; its folded run outgrew the first pools and restarts with every node";
  throw ConfigError(fmt::format(
      "{}: program {} on this machine would need about {} of host memory ({}), more than the "
      "limit of {} (--max-host-memory)",
      spec.file, program.name, approximate_bytes(e.bytes), parts,
      format_quantity(limit, QuantityKind::bytes)));
}

// Runs the simulation to its end (no event left), in slices of simulated time when there are
// limits to look at between them. Throws ConfigError when a limit ends it.
void run_to_end(const MachineSpec& spec, const isa::Program& program, const SimOptions& options,
                const RunContext& ctx, const Completion& completion) {
  const uint64_t max = options.max_picoseconds, watchdog = options.watchdog_picoseconds;
  if (max == 0 && watchdog == 0) {
    sc_core::sc_start();
    return;
  }
  // The watchdog fires within a quarter of its interval after it elapsed.
  const uint64_t slice = watchdog == 0 ? max : std::max<uint64_t>(1, watchdog / 4);
  auto unfinished = [&] {
    return fmt::format("{} of {} instructions finished", ctx.done.done,
                       program.instructions.size());
  };
  // The time up to which every event has run: the kernel's clock stays at the last event (it
  // must, for the run's end time), which may lie before it.
  uint64_t horizon = 0;
  for (;;) {
    uint64_t next = saturating_add(horizon, slice);
    if (max != 0) next = std::min(next, max);
    sc_core::sc_start(sc_core::sc_time::from_value(next - sc_core::sc_time_stamp().value()),
                      sc_core::SC_EXIT_ON_STARVATION);
    horizon = next;
    if (ctx.error || !sc_core::sc_pending_activity()) return;
    if (completion.remaining == 0) {  // the last events after the last instruction
      sc_core::sc_start();
      return;
    }
    if (max != 0 && horizon >= max)
      throw ConfigError(fmt::format(
          "{}: program {}: the run reached the simulated time limit of {} (--max-sim-time) "
          "with {}",
          spec.file, program.name, format_quantity(max, QuantityKind::time), unfinished()));
    if (watchdog != 0 && horizon - ctx.done.picoseconds >= watchdog)
      throw ConfigError(fmt::format(
          "{}: program {}: no instruction finished in {} of simulated time (from {} to {}; "
          "{}): the watchdog ended the run (--watchdog sets its interval; a machine that is "
          "not that slow has met a bug in fracsim)",
          spec.file, program.name, format_quantity(watchdog, QuantityKind::time),
          format_quantity(ctx.done.picoseconds, QuantityKind::time),
          format_quantity(horizon, QuantityKind::time), unfinished()));
  }
}

// Rejects, before simulating, a machine on which some instruction cannot be split small enough.
void check_pieces_fit(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& p) {
  std::vector<std::set<std::vector<int64_t>>> fits(spec.levels.size());  // per level
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const isa::Instruction& in = p.instructions[i];
    const isa::OpDef& op = ops.get(in.opcode);
    for (size_t l = 0; l < spec.levels.size(); ++l) {
      const LevelSpec& ls = spec.levels[l];
      const int fanout = l + 1 < spec.levels.size() ? spec.levels[l + 1].fanout : 1;
      check_smallest_piece(op, ops, in,
                           NodeShape{ls.memory.capacity, ls.controller.pipeline_depth, fanout,
                                     fmt::format("{}: level {}, program {} instruction {}",
                                                 spec.file, ls.name, p.name, i + 1)},
                           &fits[l]);
    }
  }
}

// One simulation; throws FoldPoolExhausted when a folding pool is too small.
RunResult run_once(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& program,
                   Mode mode, const SimOptions& options, bool fold,
                   const std::vector<int64_t>& pools) {
  const uint64_t reserved = isa::align_up(program.footprint, isa::kTileAlign);

  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  Kernel kernel;
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  // A run that stops on an error (or to restart with larger pools) says why itself.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  // A slice of run_to_end with no event in it is no news.
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_,
                                          sc_core::SC_DO_NOTHING);
  MachineTree tree(spec, options.fold_digest_mask);
  RunContext ctx;
  ctx.ops = &ops;
  ctx.spec = &spec;
  ctx.tree = &tree;
  isa::CostModel model = cost_model(spec, reserved);
  if (options.pin) model.pin(*options.pin);
  ctx.model = &model;
  ctx.functional = mode == Mode::functional;
  ctx.fold = fold;
  ctx.trace = options.trace;
  TimeStepEnd step_end("step_end");
  ctx.step_end = &step_end;
  ctx.progress = options.progress;
  if (ctx.functional) ctx.retired = options.retired;
  ctx.done.total = program.instructions.size();

  // The simulated nodes: the whole machine, each DMA engine bound to its parent's memory; or,
  // folding, a pool of `pools[level]` nodes per level behind an Interconnect that reaches
  // every memory of the pool above.
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::unique_ptr<Interconnect>> interconnects;
  struct KillProcesses {  // declared after the modules: runs before they go
    ~KillProcesses() { kill_processes(); }
  } kill_processes_first;
  nodes.push_back(std::make_unique<Node>("root", spec, -1, reserved, ctx));
  std::vector<std::pair<Node*, std::string>> above{{nodes.back().get(), "root"}};
  ctx.pools.resize(spec.levels.size());
  ctx.simulated_pieces.assign(spec.levels.size() + 1, 0);
  ctx.plans.resize(spec.levels.size());
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const LevelSpec& ls = spec.levels[l];
    std::vector<std::pair<Node*, std::string>> here;
    if (!ctx.fold) {
      for (auto& [parent, name] : above)
        for (int c = 0; c < ls.fanout; ++c) {
          std::string child = fmt::format("{}_{}{}", name, ls.name, c);
          nodes.push_back(std::make_unique<Node>(child.c_str(), spec, static_cast<int>(l), 0, ctx));
          Node* n = nodes.back().get();
          n->dma().socket.bind(parent->memory().socket);
          parent->add_child(n);
          here.emplace_back(n, std::move(child));
        }
    } else {
      interconnects.push_back(
          std::make_unique<Interconnect>(fmt::format("{}_interconnect", ls.name).c_str()));
      Interconnect& ic = *interconnects.back();
      for (auto& parent : above) ic.to_parents.bind(parent.first->memory().socket);
      for (int64_t j = 0; j < pools[l]; ++j) {
        std::string name = fmt::format("{}{}", ls.name, j);
        nodes.push_back(std::make_unique<Node>(name.c_str(), spec, static_cast<int>(l), 0, ctx));
        Node* n = nodes.back().get();
        n->dma().socket.bind(ic.from_children);
        n->set_port(static_cast<int>(j));
        ctx.pools[l].insert(n);
        here.emplace_back(n, std::move(name));
      }
    }
    above = std::move(here);
  }
  Node& root = *nodes.front();
  if (ctx.functional) {
    isa::MemoryView mem = root.memory().view();
    for (const isa::DataSegment& seg : program.data) isa::fill_data_segment(seg, mem);
  }
  // The root queues the whole program and runs it in order.
  Completion completion;
  completion.remaining = static_cast<int64_t>(program.instructions.size());
  ctx.spans.resize(program.instructions.size());
  std::map<std::string, uint32_t> layer_ids;
  // What the root sees ahead in its queue, for the search's estimates (halving reads none).
  const std::vector<ReuseMarks> marks = root_reuse_marks(spec, ops, program);
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    auto [it, fresh] = layer_ids.try_emplace(isa::instruction_name(program, i),
                                             static_cast<uint32_t>(ctx.layers.size()));
    if (fresh) {
      ctx.layers.emplace_back();
      ctx.layers.back().name = it->first;
      ctx.layers.back().levels.resize(spec.levels.size() + 1);
    }
    ctx.layers[it->second].instructions.push_back(i);
    Job job{program.instructions[i], nullptr, {}, 0, 1, &completion, 0, it->second, 1, nullptr};
    marks[i].apply(job.instr);
    root.submit(std::move(job));
  }

  run_to_end(spec, program, options, ctx, completion);
  if (ctx.error) std::rethrow_exception(ctx.error);
  if (completion.remaining != 0) {
    std::string busy;
    for (const auto& n : nodes) {
      std::string b = n->describe_busy();
      if (!b.empty()) busy += (busy.empty() ? "" : "; ") + b;
    }
    throw InternalError(
        fmt::format("the run stopped making progress at {} ps with {} of {} "
                    "instructions unfinished: {}",
                    sc_core::sc_time_stamp().value(), completion.remaining,
                    program.instructions.size(), busy.empty() ? "no stage busy" : busy));
  }

  RunResult r;
  r.mode = mode;
  r.folded = ctx.fold;
  r.picoseconds = sc_core::sc_time_stamp().value();
  r.cycles = (r.picoseconds + root.period_ps() - 1) / root.period_ps();
  r.nodes = tree.reports();
  r.layers = std::move(ctx.layers);
  r.spans = std::move(ctx.spans);
  r.simulated_pieces = std::move(ctx.simulated_pieces);
  if (ctx.functional) {
    r.memory.resize(program.footprint);
    // memcpy takes no null pointer, not even for no bytes (a program without data).
    if (program.footprint != 0)
      std::memcpy(r.memory.data(), root.memory().view().data, program.footprint);
  }
  return r;
}

// The nodes a run builds: every node, or with folding the pools.
int64_t simulated_nodes(const MachineSpec& spec, bool fold, const std::vector<int64_t>& pools) {
  int64_t n = 1;
  for (size_t l = 0; l < spec.levels.size(); ++l) n += fold ? pools[l] : spec.nodes_at(l);
  return n;
}

}  // namespace

HostMemoryEstimate host_memory_estimate(const MachineSpec& spec, const isa::Program& program,
                                        Mode mode, int64_t simulated) {
  HostMemoryEstimate e;
  e.nodes = 1;
  for (size_t l = 0; l < spec.levels.size(); ++l) e.nodes += spec.nodes_at(l);
  e.simulated_nodes = simulated;
  if (mode == Mode::functional) {
    // A level's memories are backed lazily; between them they hold about the data the
    // program moves through the level once (measured: 1.1 times its footprint per level on
    // configs/scale, the MLP), counted twice, or all of them if that is less.
    for (size_t l = 0; l < spec.levels.size(); ++l)
      e.node_memory_bytes = saturating_add(
          e.node_memory_bytes, std::min(saturating_mul(spec.levels[l].memory.capacity,
                                                       static_cast<uint64_t>(spec.nodes_at(l))),
                                        saturating_mul(program.footprint, kLevelFootprints)));
    e.program_bytes = saturating_mul(program.footprint, kFootprintCopies);
  }
  e.bytes = saturating_add(
      saturating_add(saturating_mul(static_cast<uint64_t>(e.nodes), kBytesPerNode),
                     saturating_mul(static_cast<uint64_t>(simulated), kBytesPerSimulatedNode)),
      saturating_add(e.node_memory_bytes, e.program_bytes));
  return e;
}

RunResult simulate(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& program,
                   Mode mode, const SimOptions& options) {
  const uint64_t reserved = isa::align_up(program.footprint, isa::kTileAlign);
  if (reserved >= spec.root.memory.capacity)
    throw ConfigError(fmt::format(
        "{}: program {} needs {} bytes of main memory (plus room for partial results) but the "
        "machine's root memory holds {}",
        spec.file, program.name, program.footprint, spec.root.memory.capacity));
  check_pieces_fit(spec, ops, program);
  const bool fold = mode == Mode::timing && options.fold;
  // Folding: how many simulated nodes each level's pool needs is known only by running. Pools
  // start small (simulated nodes cost time to build); a run that runs out starts again once,
  // with every pool as large as its level, which cannot run out (so one restart at most).
  // Classes multiply down the tree (a simulated node may need several children at once), so
  // deeper levels start with larger pools.
  std::vector<int64_t> pools;
  for (size_t l = 0; l < spec.levels.size(); ++l)
    pools.push_back(std::min<int64_t>(
        spec.nodes_at(l), std::max(1, options.fold_pool) * static_cast<int64_t>(l + 1)));
  check_host_memory(spec, program, mode, simulated_nodes(spec, fold, pools), options.max_host_bytes,
                    false);
  try {
    return run_once(spec, ops, program, mode, options, fold, pools);
  } catch (const FoldPoolExhausted&) {
    if (options.trace) options.trace->clear();
  }
  for (size_t l = 0; l < spec.levels.size(); ++l) pools[l] = spec.nodes_at(l);
  check_host_memory(spec, program, mode, simulated_nodes(spec, fold, pools), options.max_host_bytes,
                    true);
  RunResult r = run_once(spec, ops, program, mode, options, fold, pools);
  r.pools_outgrown = true;
  return r;
}

}  // namespace fracsim::sim
