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

namespace fracsim::sim {
namespace {

// Each run gets a SystemC kernel of its own, so that one process can run many simulations.
void fresh_simcontext() {
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
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
  fresh_simcontext();
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  // A run that stops on an error (or to restart with larger pools) says why itself.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  MachineTree tree(spec, options.fold_digest_mask);
  RunContext ctx;
  ctx.ops = &ops;
  ctx.spec = &spec;
  ctx.tree = &tree;
  isa::CostModel model = cost_model(spec);
  if (options.pin) model.pin(*options.pin);
  ctx.model = &model;
  ctx.functional = mode == Mode::functional;
  ctx.fold = fold;
  ctx.trace = options.trace;
  ctx.progress = options.progress;
  ctx.done.total = program.instructions.size();

  // The simulated nodes: the whole machine, each DMA engine bound to its parent's memory; or,
  // folding, a pool of `pools[level]` nodes per level behind an Interconnect that reaches
  // every memory of the pool above.
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::unique_ptr<Interconnect>> interconnects;
  nodes.push_back(std::make_unique<Node>("root", spec, -1, reserved, ctx));
  std::vector<std::pair<Node*, std::string>> above{{nodes.back().get(), "root"}};
  ctx.pools.resize(spec.levels.size());
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
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    auto [it, fresh] = layer_ids.try_emplace(isa::instruction_name(program, i),
                                             static_cast<uint32_t>(ctx.layers.size()));
    if (fresh) {
      ctx.layers.emplace_back();
      ctx.layers.back().name = it->first;
      ctx.layers.back().levels.resize(spec.levels.size() + 1);
    }
    ctx.layers[it->second].instructions.push_back(i);
    root.submit(
        Job{program.instructions[i], nullptr, {}, 0, 1, &completion, 0, it->second, 1, nullptr});
  }

  sc_core::sc_start();
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
  if (ctx.functional) {
    r.memory.resize(program.footprint);
    std::memcpy(r.memory.data(), root.memory().view().data, program.footprint);
  }
  return r;
}

}  // namespace

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
  try {
    return run_once(spec, ops, program, mode, options, fold, pools);
  } catch (const FoldPoolExhausted&) {
    if (options.trace) options.trace->clear();
  }
  for (size_t l = 0; l < spec.levels.size(); ++l) pools[l] = spec.nodes_at(l);
  RunResult r = run_once(spec, ops, program, mode, options, fold, pools);
  r.pools_outgrown = true;
  return r;
}

}  // namespace fracsim::sim
