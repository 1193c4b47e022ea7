// `fracsim run`: simulates a program on a machine, prints the summary and writes stats.json.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/command.h"
#include "sim/cli/program_io.h"
#include "sim/cli/progress_line.h"
#include "sim/config_override.h"
#include "sim/instruction_check.h"
#include "sim/layer_report.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/node.h"
#include "sim/report.h"
#include "sim/trace.h"
#include "sim/units.h"

namespace po = boost::program_options;

namespace fracsim::cli {
namespace {

// The flags of `fracsim run`, as given.
struct RunFlags {
  std::string config, workload, mode = "timing", out_dir, trace, backend, layers;
  std::string max_host_memory, max_sim_time, watchdog;
  std::vector<std::string> sets;
  CompileFlags compile;
  bool no_fold = false;
};

// Every option of `fracsim run`, declared once: parsing and `fracsim run --help` read this.
po::options_description run_options(RunFlags& f) {
  po::options_description opts;
  auto add = opts.add_options();
  add("machine,m", po::value(&f.config)->required(), "machine config (.yaml)");
  add("workload,w", po::value(&f.workload)->required(),
      "the program: a workload (.yaml, .onnx; compiled on the fly), a binary (.fbin) or an "
      "assembly text (.fasm)");
  add_set_option(opts, f.sets);
  add("mode", po::value(&f.mode)->default_value(f.mode), "functional or timing");
  add("backend", po::value(&f.backend),
      "leaf backend, model or rtl, instead of the config's (rtl: integer matmul/conv, vector "
      "ops and merges on the Verilated units, other ops on the C++ model)");
  add_compile_flags(opts, f.compile);
  add = opts.add_options();
  add("out", po::value(&f.out_dir),
      "directory of stats.json (default results/runs/PROGRAM-MACHINE-MODE)");
  add("no-fold", po::bool_switch(&f.no_fold),
      "simulate every node of a timing run (same results, slower)");
  add("trace", po::value(&f.trace), "write a Chrome/Perfetto trace-event timeline of the stages");
  add("max-host-memory", po::value(&f.max_host_memory),
      "BYTES: refuse, before it starts, a run estimated to need more host memory (e.g. 8GiB; "
      "default 80% of physical memory; sim/README.md, \"Limits\")");
  add("max-sim-time", po::value(&f.max_sim_time),
      "TIME: end the run with an error when its simulated time reaches TIME (e.g. 10ms)");
  add("watchdog", po::value(&f.watchdog),
      "TIME: end the run with an error when no instruction finishes for TIME of simulated time "
      "(default 10 s; 0 s: never)");
  add("layers", po::value(&f.layers)->implicit_value("all"),
      "--layers[=N]: print the per-layer table (DIR/layers.csv has every layer): the N layers "
      "with most cycles, default all, with each one's roofline bound and attained fraction");
  return opts;
}

// The config with the leaf backend `backend` instead of its own; the effective config says so.
void override_backend(sim::MachineSpec& spec, const std::string& backend) {
  spec.levels.back().backend = backend;
  nlohmann::ordered_json& levels = spec.effective["levels"];
  if (levels.is_array() && !levels.empty() && levels.back().contains("leaf")) {
    nlohmann::ordered_json& leaf = levels.back()["leaf"];
    leaf["backend"] = backend;
    if (leaf.contains("defaulted") && leaf["defaulted"].is_array()) {
      nlohmann::ordered_json given = nlohmann::ordered_json::array();
      for (const auto& k : leaf["defaulted"])
        if (k != "backend") given.push_back(k);
      leaf["defaulted"] = given;
    }
  }
}

// --max-host-memory's default: 80% of the physical memory, in whole MiB (0, no limit, when the
// system does not say).
uint64_t default_max_host_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  const uint64_t mib = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / (1 << 20);
  return mib * 8 / 10 * (1 << 20);
}

// --max-host-memory, --max-sim-time and --watchdog into `options`.
void apply_limits(const RunFlags& f, sim::SimOptions& options) {
  options.max_host_bytes =
      f.max_host_memory.empty()
          ? default_max_host_memory()
          : sim::parse_quantity_text(f.max_host_memory, sim::QuantityKind::bytes,
                                     "fracsim run: --max-host-memory");
  if (!f.max_sim_time.empty())
    options.max_picoseconds = sim::parse_quantity_text(f.max_sim_time, sim::QuantityKind::time,
                                                       "fracsim run: --max-sim-time");
  if (!f.watchdog.empty())
    options.watchdog_picoseconds =
        sim::parse_quantity_text(f.watchdog, sim::QuantityKind::time, "fracsim run: --watchdog");
  if (!f.max_host_memory.empty() && options.max_host_bytes == 0)
    throw ConfigError("fracsim run: --max-host-memory: must be more than 0 B");
  if (!f.max_sim_time.empty() && options.max_picoseconds == 0)
    throw ConfigError("fracsim run: --max-sim-time: must be more than 0 ps");
}

}  // namespace

int cmd_run(const Command& self, const std::vector<std::string>& args) {
  RunFlags f;
  if (!parse_command_line(self, args, run_options(f))) return 0;
  sim::Mode mode;
  if (f.mode == "functional")
    mode = sim::Mode::functional;
  else if (f.mode == "timing")
    mode = sim::Mode::timing;
  else
    throw ConfigError(
        fmt::format("fracsim run: --mode: expected functional or timing, got '{}'", f.mode));
  if (!f.backend.empty() && f.backend != "model" && f.backend != "rtl")
    throw ConfigError(
        fmt::format("fracsim run: --backend: expected model or rtl, got '{}'", f.backend));

  const compiler::CompileOptions compile = compile_options(self.name, f.compile);
  size_t layer_rows = 0;
  if (!f.layers.empty() && f.layers != "all") {
    char* end = nullptr;
    const long long n = std::strtoll(f.layers.c_str(), &end, 10);
    if (n <= 0 || *end != '\0' || f.layers[0] == '+')
      throw ConfigError(fmt::format(
          "fracsim run: --layers: expected a positive number of layers, got '{}'", f.layers));
    layer_rows = static_cast<size_t>(n);
  }

  const isa::OpTable& ops = isa::OpTable::builtin();
  std::vector<sim::ConfigOverride> overrides;
  for (const std::string& s : f.sets) overrides.push_back(sim::parse_override(s));
  sim::MachineSpec spec = sim::load_machine_spec(f.config, overrides);
  if (!f.backend.empty()) override_backend(spec, f.backend);
  const isa::Program program = load_program(f.workload, ops, compile);
  if (f.out_dir.empty())
    f.out_dir =
        fmt::format("results/runs/{}{}-{}-{}", program.name,
                    compile.batch ? fmt::format("-b{}", *compile.batch) : "", spec.name, f.mode);

  // Where the run will write, checked before it starts: a long run's result is not lost to a
  // mistyped path.
  if (!f.trace.empty()) check_writable(f.trace);
  check_directory_writable(f.out_dir);

  sim::SimOptions options;
  options.fold = !f.no_fold;
  apply_limits(f, options);
  sim::TraceRecorder trace;
  if (!f.trace.empty()) options.trace = &trace;
  std::optional<sim::InstructionChecker> checker;
  if (mode == sim::Mode::functional) {
    checker.emplace(program, ops);
    options.retired = [&](size_t k, isa::MemoryView memory) { checker->retired(k, memory); };
  }
  // Progress of long runs.
  const auto t0 = std::chrono::steady_clock::now();
  sim::RunResult run;
  {
    ProgressLine line;
    if (line.active())
      options.progress = [&](const sim::Progress& p) {
        line.update(fmt::format("  {} / {} instructions, {:.3f} us simulated", p.done, p.total,
                                static_cast<double>(p.picoseconds) * 1e-6),
                    p.done == p.total);
      };
    run = sim::simulate(spec, ops, program, mode, options);
    line.clear();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!f.trace.empty()) write_file_atomically(f.trace, trace.json());
  sim::FunctionalCheck check;
  if (mode == sim::Mode::functional) {
    check.outputs = sim::check_outputs(program, ops, run.memory);
    check.instructions = checker->result();
  }

  make_directories(f.out_dir);
  const std::string stats_path = (std::filesystem::path(f.out_dir) / "stats.json").string();
  write_file_atomically(stats_path, sim::stats_text(spec, program, run, check));
  const std::vector<sim::LayerRecord> layers = sim::layer_records(spec, program, ops, run);
  write_file_atomically((std::filesystem::path(f.out_dir) / "layers.csv").string(),
                        sim::layers_csv(spec, layers));

  std::cout << sim::summary_text(spec, program, run, check);
  if (!f.layers.empty()) std::cout << sim::layers_table(layers, layer_rows);
  // Microseconds: a folded run of thousands of leaves takes a few milliseconds.
  std::cout << fmt::format("  wall time     {:.6f} s\n  stats         {}\n", wall, stats_path);
  if (mode == sim::Mode::functional) {
    if (!check.holds()) return 1;
    std::cout << (check.outputs_match()
                      ? "outputs match the reference\n"
                      : "every instruction matches the reference; the outputs differ by "
                        "the sums it reassociates\n");
  }
  return 0;
}

}  // namespace fracsim::cli
