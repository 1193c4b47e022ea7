// `fracsim map`: the mapping oracle (sim/mapping_oracle.h) on one instruction of a program.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/atomic_file.h"
#include "sim/cli/command.h"
#include "sim/cli/program_io.h"
#include "sim/cli/progress_line.h"
#include "sim/config_override.h"
#include "sim/machine_spec.h"
#include "sim/mapping_oracle.h"

namespace po = boost::program_options;

namespace fracsim::cli {
namespace {

struct MapFlags {
  std::string config, workload, instruction, sample, seed = "1", shown = "10", max_pieces, trace;
  std::vector<std::string> sets, candidates;
  CompileFlags compile;
};

po::options_description map_options(MapFlags& f) {
  po::options_description opts;
  auto add = opts.add_options();
  add("machine,m", po::value(&f.config)->required(), "machine config (.yaml)");
  add("workload,w", po::value(&f.workload)->required(),
      "the program: a workload (.yaml, .onnx; compiled on the fly), a binary (.fbin) or an "
      "assembly text (.fasm)");
  add("instruction", po::value(&f.instruction)->required(),
      "K: the program's instruction K, counted from 0");
  add("sample", po::value(&f.sample),
      "N: simulate the choice's neighbourhood and N distinct candidates drawn with "
      "std::mt19937_64 instead of the whole space");
  add("seed", po::value(&f.seed)->default_value(f.seed), "S: the seed of --sample's draws");
  add("candidate", po::value(&f.candidates),
      "C: simulate this candidate (repeatable) instead of the space or a sample, written as the "
      "report lists one: 'Co=256 Ho=7 | Co=8 Wo=4', tile lengths (a dim not given whole), then "
      "after '|' parts per parallel dim (a dim not given unsplit; without '|', the policy's "
      "partition)");
  add("max-pieces", po::value(&f.max_pieces),
      fmt::format("P: only tilings of at most P pieces at the top node (default {}; 0: every "
                  "tiling): a candidate's simulation time and memory grow with its pieces",
                  sim::kOracleMaxPieces)
          .c_str());
  add("show", po::value(&f.shown)->default_value(f.shown), "N: the fastest candidates listed");
  add("trace", po::value(&f.trace),
      "DIR: write each simulation's Chrome/Perfetto trace-event timeline into DIR (made if "
      "missing): chosen.json for the policy's plain run, and one per candidate named by its "
      "tile and parts as listed (Co=256 Ho=3 | Co=8 Wo=4: Co256-Ho3_Co8-Wo4.json)");
  add_set_option(opts, f.sets);
  add_compile_flags(opts, f.compile);
  return opts;
}

// A whole number for `flag`, at least `least`.
uint64_t count_flag(const std::string& flag, const std::string& text, uint64_t least) {
  size_t used = 0;
  unsigned long long v = 0;
  bool ok = !text.empty() && text[0] >= '0' && text[0] <= '9';
  try {
    if (ok) v = std::stoull(text, &used);
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok || used != text.size() || v < least)
    throw ConfigError(fmt::format("fracsim map: --{}: expected a whole number{}, got '{}'", flag,
                                  least > 0 ? fmt::format(" of at least {}", least) : "", text));
  return v;
}

}  // namespace

int cmd_map(const Command& self, const std::vector<std::string>& args) {
  MapFlags f;
  if (!parse_command_line(self, args, map_options(f))) return 0;
  const uint64_t index = count_flag("instruction", f.instruction, 0);
  sim::OracleOptions options;
  if (!f.sample.empty()) options.sample = count_flag("sample", f.sample, 1);
  if (!f.sample.empty() && !f.candidates.empty())
    throw ConfigError(
        "fracsim map: --sample and --candidate: give one (a sample of the space, "
        "or the candidates to simulate)");
  options.candidates = f.candidates;
  options.seed = count_flag("seed", f.seed, 0);
  if (!f.max_pieces.empty()) options.max_pieces = count_flag("max-pieces", f.max_pieces, 0);
  const uint64_t shown = count_flag("show", f.shown, 0);
  const compiler::CompileOptions compile = compile_options(self.name, f.compile);

  const isa::OpTable& ops = isa::OpTable::builtin();
  std::vector<sim::ConfigOverride> overrides;
  for (const std::string& s : f.sets) overrides.push_back(sim::parse_override(s));
  const sim::MachineSpec spec = sim::load_machine_spec(f.config, overrides);
  const isa::Program program = load_program(f.workload, ops, compile);
  if (!f.trace.empty()) {
    make_directories(f.trace);
    options.timeline = [&](const std::string& name, const std::string& json) {
      write_file_atomically((std::filesystem::path(f.trace) / (name + ".json")).string(), json);
    };
  }
  // Progress: a large space takes minutes.
  sim::OracleResult r;
  {
    ProgressLine line;
    if (line.active())
      options.progress = [&](size_t done, size_t total) {
        line.update(fmt::format("  {} / {} candidates simulated", done, total), done == total);
      };
    r = sim::map_instruction(spec, ops, program, index, options);
    line.clear();
  }
  std::cout << sim::oracle_text(ops, r, shown);
  if (!f.trace.empty()) std::cout << fmt::format("  timelines     in {}\n", f.trace);
  return 0;
}

}  // namespace fracsim::cli
