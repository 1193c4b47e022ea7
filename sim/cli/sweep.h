// `fracsim sweep`: many runs of `fracsim run` from one spec (sweep.yaml), each a child process
// writing its own directory, then one CSV row per run gathered from their stats.json files.
//
// The output directory DIR holds
//   sweep.json           the manifest: every run of the spec, in order, with its parameters
//   runs/NAME/           one finished run: stats.json, layers.csv, run.log (its output), run.json
//                        (the sweep's record: wall time); NAME is derived from the parameters
//   runs/NAME.partial/   a run under way (renamed to runs/NAME when it succeeds)
//   runs/NAME.failed/    a run that failed, with its run.log; the next sweep retries it
//   sweep.csv            one row per finished run (sweep_csv_columns())
//   slurm/               the job script, its task list and the tasks' output (--slurm)
// A run is done when runs/NAME exists: a killed sweep keeps every finished run, and the next one
// runs only the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fracsim::cli {

// One run of a sweep: `fracsim run` with these flags.
struct SweepRun {
  std::string name;              // its directory under DIR/runs
  std::string config;            // the machine config as the spec writes it
  std::string config_path;       // and as a path the run can open (absolute)
  std::string workload;          // likewise
  std::string workload_path;     // absolute
  std::optional<int64_t> batch;  // --batch; nullopt: the workload as written
  int64_t inferences = 1;        // samples per run: the batch, or the written one (1 if none)
  std::string mode;              // timing or functional
  std::string policy;            // the decomposer policy, a --set decomposer=POLICY ("" none)
  std::vector<std::pair<std::string, std::string>> sets;  // --set KEY=VALUE, in spec order

  // --set texts of the run, the policy's last.
  std::vector<std::string> overrides() const;
  // "KEY=VALUE; KEY=VALUE": the sets without the policy, for sweep.csv.
  std::string overrides_text() const;
};

struct SweepSpec {
  std::string name;
  std::string file;
  std::vector<SweepRun> runs;  // in the order of the spec: sweep.csv's row order
};

// Reads and validates a sweep spec: unknown keys, empty lists, bad values and duplicate runs are
// errors naming file, line and key; every machine config is loaded with its overrides (so a
// policy the machine format does not know fails here) and every workload at its batch.
SweepSpec load_sweep_spec(const std::string& path);

// The manifest DIR/sweep.json, written before any run starts and read by --gather and the
// Slurm tasks.
nlohmann::ordered_json sweep_manifest(const SweepSpec& spec);
SweepSpec read_sweep_manifest(const std::string& dir);
void write_sweep_manifest(const std::string& dir, const SweepSpec& spec);

// Paths inside DIR.
std::string run_dir(const std::string& dir, const SweepRun& run);  // DIR/runs/NAME
bool run_done(const std::string& dir, const SweepRun& run);

// Runs one run as a child process (`fracsim run`, this binary), output in run.log; on success
// writes run.json and renames the run's directory to runs/NAME. Returns the child's exit code.
int execute_run(const std::string& dir, const SweepRun& run);

// Runs every run not yet done with up to `jobs` at once; progress on a terminal. Returns the
// number of runs that failed.
size_t run_sweep_locally(const std::string& dir, const SweepSpec& spec, int jobs);

// Submits the runs not yet done as one Slurm job array and, unless `wait` is false, follows it
// until it has left the queue. Returns the number of runs still not done (0 after --no-wait).
size_t run_sweep_on_slurm(const std::string& dir, const SweepSpec& spec,
                          const std::string& partition, bool wait);

// The columns of sweep.csv, in order (sim/README.md, "Sweeps").
const std::vector<std::string>& sweep_csv_columns();
// Writes DIR/sweep.csv from the finished runs' stats.json and run.json; returns the runs that
// are not done.
std::vector<std::string> gather_sweep(const std::string& dir, const SweepSpec& spec);

// This binary's absolute path (/proc/self/exe), which the runs and the Slurm tasks execute.
std::string fracsim_binary();

}  // namespace fracsim::cli
