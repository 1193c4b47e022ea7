// `fracsim sweep SPEC [-j N | --slurm ...] [--out DIR] [--plots]`, `fracsim sweep --gather DIR`.
#include <filesystem>
#include <iostream>
#include <thread>

#include <sys/wait.h>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/atomic_file.h"
#include "sim/cli/command.h"
#include "sim/cli/interrupt.h"
#include "sim/cli/sweep.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace fracsim::cli {
namespace {

// The flags of `fracsim sweep`, as given.
struct SweepFlags {
  std::string spec, out_dir, gather, partition, run;
  int jobs = 0;
  bool slurm = false, no_wait = false, plots = false;
};

// Every option of `fracsim sweep`, declared once: parsing and `fracsim sweep --help` read this.
po::options_description sweep_options(SweepFlags& f) {
  po::options_description opts;
  auto add = opts.add_options();
  add("spec", po::value(&f.spec), "SPEC: the sweep spec (.yaml) (positional)");
  add("jobs,j", po::value(&f.jobs),
      "N: runs at once on this machine (default: the number of processors)");
  add("out", po::value(&f.out_dir),
      "DIR: the sweep's directory (default results/runs/sweep-NAME): runs/NAME/ per run, "
      "sweep.csv");
  add("slurm", po::bool_switch(&f.slurm),
      "submit the runs as one Slurm job array (sbatch), follow it, then write sweep.csv");
  add("partition", po::value(&f.partition), "P: the Slurm partition (--slurm)");
  add("no-wait", po::bool_switch(&f.no_wait),
      "with --slurm: submit and return; 'fracsim sweep --gather DIR' later writes sweep.csv");
  add("gather", po::value(&f.gather),
      "DIR: write DIR/sweep.csv from the runs finished so far (after --no-wait)");
  add("plots", po::bool_switch(&f.plots),
      "then draw the plots of sweep.csv into DIR/plots (scripts/plot_sweep)");
  add("run", po::value(&f.run),
      "NAME: run one run of the sweep in --out DIR (what each Slurm task does)");
  return opts;
}

// scripts/plot_sweep CSV --out DIR/plots; its exit code.
int draw_plots(const std::string& dir) {
  const std::string script = std::string(FRACSIM_SCRIPTS_DIR) + "/plot_sweep";
  const std::string csv = (fs::path(dir) / "sweep.csv").string();
  const std::string out = (fs::path(dir) / "plots").string();
  std::cerr << fmt::format("  plots: {} {} --out {}\n", script, csv, out);
  const std::string command = fmt::format("'{}' '{}' --out '{}'", script, csv, out);
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Writes sweep.csv and says what it holds; 0 when every run is done, else 1.
int gather_and_report(const std::string& dir, const SweepSpec& spec, bool plots) {
  const std::vector<std::string> missing = gather_sweep(dir, spec);
  const size_t done = spec.runs.size() - missing.size();
  std::cout << fmt::format("sweep {}: {} of {} runs done; {} ({} rows)\n", spec.name, done,
                           spec.runs.size(), (fs::path(dir) / "sweep.csv").string(), done);
  for (const std::string& m : missing) {
    const fs::path failed = fs::path(dir) / "runs" / (m + ".failed");
    std::cout << fmt::format(
        "  not done: {}{}\n", m,
        fs::exists(failed) ? fmt::format(" (failed: see {}/run.log)", failed.string()) : "");
  }
  if (plots && done > 0 && draw_plots(dir) != 0) return 1;
  return missing.empty() ? 0 : 1;
}

}  // namespace

int cmd_sweep(const Command& self, const std::vector<std::string>& args) {
  SweepFlags f;
  po::positional_options_description pos;
  pos.add("spec", 1);
  const auto vm = parse_command_line(self, args, sweep_options(f), pos);
  if (!vm) return 0;
  const bool jobs_given = vm->count("jobs") > 0;
  auto refuse = [](const std::string& why) { return ConfigError("fracsim sweep: " + why); };
  if (!f.slurm && (f.no_wait || !f.partition.empty()))
    throw refuse(f.no_wait ? "--no-wait needs --slurm" : "--partition needs --slurm");
  if (f.slurm && jobs_given) throw refuse("-j applies to local sweeps, not to --slurm");
  if (jobs_given && f.jobs <= 0)
    throw refuse(fmt::format("-j: expected a positive number of runs at once, got {}", f.jobs));

  if (!f.run.empty()) {  // one run of a sweep already set up (a Slurm task)
    if (f.out_dir.empty() || !f.spec.empty() || !f.gather.empty() || f.slurm)
      throw refuse("--run NAME goes with --out DIR only");
    defer_interrupts();
    const SweepSpec spec = read_sweep_manifest(f.out_dir);
    for (const SweepRun& r : spec.runs)
      if (r.name == f.run) return execute_run(f.out_dir, r);
    throw refuse(fmt::format("--run {}: no such run in {}/sweep.json", f.run, f.out_dir));
  }
  if (!f.gather.empty()) {
    if (!f.spec.empty() || !f.out_dir.empty() || f.slurm || jobs_given)
      throw refuse("--gather DIR takes no SPEC and no other option but --plots");
    return gather_and_report(f.gather, read_sweep_manifest(f.gather), f.plots);
  }
  if (f.spec.empty()) throw refuse("give a sweep spec (see 'fracsim sweep --help')");

  const SweepSpec spec = load_sweep_spec(f.spec);
  if (f.out_dir.empty()) f.out_dir = "results/runs/sweep-" + spec.name;
  make_directories((fs::path(f.out_dir) / "runs").string());
  write_sweep_manifest(f.out_dir, spec);
  if (f.slurm) {
    run_sweep_on_slurm(f.out_dir, spec, f.partition, !f.no_wait);
    if (f.no_wait) return 0;
  } else {
    const int jobs =
        f.jobs > 0 ? f.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // A signal now stops the runs under way and keeps the finished ones (sweep_local.cpp).
    defer_interrupts();
    run_sweep_locally(f.out_dir, spec, jobs);
  }
  const int code = gather_and_report(f.out_dir, spec, f.plots);
  if (const int sig = interrupt_signal())
    throw Interrupted(sig,
                      fmt::format("fracsim sweep: interrupted by {} after its runs; {} is "
                                  "complete",
                                  signal_name(sig), (fs::path(f.out_dir) / "sweep.csv").string()));
  return code;
}

}  // namespace fracsim::cli
