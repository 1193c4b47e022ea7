// Running a sweep's runs on Slurm: one job array whose task K runs the K-th run not yet done
// (`fracsim sweep --run NAME --out DIR`, the same code as a local run), then following the
// array with squeue until it has left the queue.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/program_io.h"
#include "sim/cli/sweep.h"

namespace fs = std::filesystem;

namespace fracsim::cli {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a shell command; its stdout and exit code.
std::pair<std::string, int> shell(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) throw InternalError(fmt::format("popen: {}", command));
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

size_t count_done(const std::string& dir, const SweepSpec& spec) {
  size_t n = 0;
  for (const SweepRun& r : spec.runs) n += run_done(dir, r) ? 1 : 0;
  return n;
}

}  // namespace

size_t run_sweep_on_slurm(const std::string& dir, const SweepSpec& spec,
                          const std::string& partition, bool wait) {
  std::vector<const SweepRun*> todo;
  for (const SweepRun& r : spec.runs)
    if (!run_done(dir, r)) todo.push_back(&r);
  const size_t total = spec.runs.size();
  std::cerr << fmt::format("sweep {}: {} runs, {} done already, {} to submit to Slurm\n", spec.name,
                           total, total - todo.size(), todo.size());
  if (todo.empty()) return 0;

  // Each submission has its own script and task list, so that one still queued keeps its own.
  const fs::path slurm = fs::absolute(fs::path(dir) / "slurm").lexically_normal();
  fs::create_directories(slurm);
  int n = 1;
  while (fs::exists(slurm / fmt::format("job-{}.sh", n))) ++n;
  const fs::path tasks = slurm / fmt::format("tasks-{}.txt", n);
  const fs::path script = slurm / fmt::format("job-{}.sh", n);
  std::string names;
  for (const SweepRun* r : todo) names += r->name + "\n";
  write_file_atomically(tasks.string(), names);
  const std::string out_dir = fs::absolute(dir).lexically_normal().string();
  write_file_atomically(
      script.string(),
      fmt::format("#!/bin/sh\n"
                  "#SBATCH --job-name=fracsim-sweep-{}\n"
                  "#SBATCH --array=0-{}\n"
                  "#SBATCH --ntasks=1\n"
                  "#SBATCH --cpus-per-task=1\n"
                  "#SBATCH --output={}\n"
                  "# Task K runs line K+1 of the task list.\n"
                  "name=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {})\n"
                  "exec {} sweep --run \"$name\" --out {}\n",
                  spec.name, todo.size() - 1, (slurm / fmt::format("{}-%a.out", n)).string(),
                  shell_quoted(tasks.string()), shell_quoted(fracsim_binary()),
                  shell_quoted(out_dir)));
  std::string submit = "sbatch --parsable";
  if (!partition.empty()) submit += " --partition " + shell_quoted(partition);
  submit += " " + shell_quoted(script.string()) + " 2>&1";
  const auto [answer, code] = shell(submit);
  if (code != 0)
    throw ConfigError(fmt::format("sbatch {}: failed (exit {}): {}", script.string(), code,
                                  answer.empty() ? "no output" : answer));
  // --parsable prints "JOBID" or "JOBID;CLUSTER".
  const std::string job = answer.substr(0, answer.find_first_of(";\n"));
  std::cerr << fmt::format("  submitted job array {} ({} tasks, script {})\n", job, todo.size(),
                           script.string());
  if (!wait) {
    std::cerr << fmt::format("  'fracsim sweep --gather {}' writes sweep.csv when it is done\n",
                             dir);
    return 0;
  }

  const bool tty = isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  const size_t done_before = total - todo.size();
  size_t shown = done_before;
  while (true) {
    // One line per task still pending or running (-r: array tasks one by one); nothing, or an
    // error once the job is purged, when the array has left the queue.
    const auto [states, sq] = shell("squeue -h -r -j " + job + " -o %T 2>/dev/null");
    size_t pending = 0, running = 0;
    for (size_t at = 0; at < states.size();) {
      const size_t end = states.find('\n', at);
      const std::string s = states.substr(at, end - at);
      if (s == "PENDING") ++pending;
      if (!s.empty() && s != "PENDING") ++running;
      at = end == std::string::npos ? states.size() : end + 1;
    }
    const size_t done = count_done(dir, spec);
    if (tty || done != shown) {
      std::string left = "time left unknown";
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (done > done_before)
        left =
            fmt::format("about {:.0f} s left", elapsed / static_cast<double>(done - done_before) *
                                                   static_cast<double>(total - done));
      const std::string line = fmt::format("  {}/{} runs done, {} pending, {} running, {}", done,
                                           total, pending, running, left);
      if (tty)
        std::cerr << "\r\033[K" << line << std::flush;
      else
        std::cerr << line << "\n";
      shown = done;
    }
    if (sq != 0 || pending + running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (tty) std::cerr << "\r\033[K" << std::flush;
  return total - count_done(dir, spec);
}

}  // namespace fracsim::cli
