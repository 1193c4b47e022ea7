#include "sim/machine.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/node.h"

namespace fracsim::sim {
namespace {

// Feeds the program's instructions to the root, in order.
class ProgramDriver : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ProgramDriver);
  ProgramDriver(const sc_core::sc_module_name& name, const isa::Program& program, Node& root)
      : sc_module(name), program_(program), root_(root) {
    SC_THREAD(feed);
  }
  Completion completion;

 private:
  void feed() {
    completion.remaining = static_cast<int64_t>(program_.instructions.size());
    for (const isa::Instruction& in : program_.instructions) root_.submit(Job{in, &completion});
  }
  const isa::Program& program_;
  Node& root_;
};

// Each run gets a SystemC kernel of its own, so that one process can run many simulations.
void fresh_simcontext() {
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

}  // namespace

RunResult simulate(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& program,
                   Mode mode) {
  const uint64_t reserved = isa::align_up(program.footprint, isa::kTileAlign);
  if (reserved >= spec.root.memory.capacity)
    throw ConfigError(fmt::format(
        "{}: program {} needs {} bytes of main memory (plus room for partial results) but the "
        "machine's root memory holds {}", spec.file, program.name, program.footprint,
        spec.root.memory.capacity));

  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  fresh_simcontext();
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  RunContext ctx;
  ctx.ops = &ops;
  ctx.functional = mode == Mode::functional;

  // Build the tree level by level; node names mirror the machine.
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.push_back(std::make_unique<Node>("root", "root", spec, -1, nullptr, reserved, ctx));
  std::vector<Node*> above{nodes.back().get()};
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const LevelSpec& ls = spec.levels[l];
    std::vector<Node*> here;
    for (Node* parent : above)
      for (int c = 0; c < ls.fanout; ++c) {
        std::string path = fmt::format("{}.{}{}", parent->path(), ls.name, c);
        std::string name = path;
        for (char& ch : name)
          if (ch == '.') ch = '_';
        nodes.push_back(std::make_unique<Node>(name.c_str(), path, spec, static_cast<int>(l),
                                               parent, 0, ctx));
        parent->add_child(nodes.back().get());
        here.push_back(nodes.back().get());
      }
    above = std::move(here);
  }
  Node& root = *nodes.front();
  if (ctx.functional) {
    isa::MemoryView mem = root.memory().view();
    for (const isa::DataSegment& seg : program.data) isa::fill_data_segment(seg, mem);
  }
  ProgramDriver driver("driver", program, root);

  sc_core::sc_start();
  if (ctx.error) std::rethrow_exception(ctx.error);
  if (driver.completion.remaining != 0) {
    std::string busy;
    for (const auto& n : nodes) {
      std::string b = n->describe_busy();
      if (!b.empty()) busy += (busy.empty() ? "" : "; ") + b;
    }
    throw InternalError(fmt::format("the run stopped making progress with {} of {} instructions "
                                    "unfinished: {}", driver.completion.remaining,
                                    program.instructions.size(), busy.empty() ? "no stage busy" : busy));
  }

  RunResult r;
  r.mode = mode;
  r.picoseconds = sc_core::sc_time_stamp().value();
  r.cycles = (r.picoseconds + root.period_ps() - 1) / root.period_ps();
  for (const auto& n : nodes) r.nodes.push_back(NodeReport{n->path(), n->level(), n->stats()});
  if (ctx.functional) {
    r.memory.resize(program.footprint);
    std::memcpy(r.memory.data(), root.memory().view().data, program.footprint);
  }
  return r;
}

}  // namespace fracsim::sim
