// Running a sweep's runs on this machine: each one a `fracsim run` child process writing into
// runs/NAME.partial, renamed to runs/NAME when it succeeds.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/interrupt.h"
#include "sim/cli/program_io.h"
#include "sim/cli/sweep.h"

namespace fs = std::filesystem;

namespace fracsim::cli {
namespace {

using Clock = std::chrono::steady_clock;

// `fracsim run` with the run's flags, its output into `out`.
std::vector<std::string> run_arguments(const SweepRun& run, const std::string& out) {
  std::vector<std::string> args{fracsim_binary(),  "run",    "-m",    run.config_path, "-w",
                                run.workload_path, "--mode", run.mode};
  if (run.batch) {
    args.emplace_back("--batch");
    args.push_back(std::to_string(*run.batch));
  }
  for (const std::string& o : run.overrides()) {
    args.emplace_back("--set");
    args.push_back(o);
  }
  args.emplace_back("--out");
  args.push_back(out);
  return args;
}

// Starts `args` with stdout and stderr into `log`; the child dies with this process, so that a
// killed sweep leaves no run behind it. The child runs this process's own executable
// (/proc/self/exe, args[0] naming it), so that a fracsim rebuilt or replaced on disk while a
// sweep runs neither changes nor breaks the runs still to come; a child that cannot start says
// why in `log` and exits 127.
pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw ConfigError(fmt::format("{}: cannot write ({})", log, std::strerror(errno)));
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string cannot = fmt::format("fracsim sweep: cannot run {}: ", args[0]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execv("/proc/self/exe", argv.data());
    const char* why = std::strerror(errno);
    if (::write(STDERR_FILENO, cannot.data(), cannot.size()) >= 0 &&
        ::write(STDERR_FILENO, why, std::strlen(why)) >= 0)
      (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  ::close(fd);
  if (pid < 0) throw InternalError(fmt::format("fork: {}", std::strerror(errno)));
  return pid;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string partial_dir(const std::string& dir, const SweepRun& run) {
  return run_dir(dir, run) + ".partial";
}

// Makes runs/NAME.partial afresh and starts the run in it.
pid_t start_run(const std::string& dir, const SweepRun& run) {
  const std::string partial = partial_dir(dir, run);
  fs::remove_all(partial);
  fs::create_directories(partial);
  return spawn(run_arguments(run, partial), partial + "/run.log");
}

// After the child: run.json and the rename to runs/NAME, or runs/NAME.failed.
void finish_run(const std::string& dir, const SweepRun& run, int code, double wall) {
  const std::string partial = partial_dir(dir, run);
  const std::string final_dir = code == 0 ? run_dir(dir, run) : run_dir(dir, run) + ".failed";
  nlohmann::ordered_json record = {{"name", run.name}, {"exit_code", code}, {"wall_seconds", wall}};
  write_file_atomically(partial + "/run.json", record.dump(2) + "\n");
  fs::remove_all(final_dir);
  fs::rename(partial, final_dir);
}

// On a deferred SIGINT or SIGTERM: each run under way is sent SIGTERM (its own handler removes
// the temporary it is writing), waited for, and its runs/NAME.partial removed; what is done
// stays. Throws Interrupted.
[[noreturn]] void stop_runs(const std::string& dir, const std::vector<const SweepRun*>& running,
                            const std::vector<pid_t>& pids, size_t done, size_t total) {
  const int sig = interrupt_signal();
  for (const pid_t pid : pids) ::kill(pid, SIGTERM);
  for (const pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (const SweepRun* r : running) fs::remove_all(partial_dir(dir, *r));
  throw Interrupted(
      sig, fmt::format("fracsim sweep: interrupted by {}: {} of {} runs done, kept in {}/runs; "
                       "{} under way stopped and removed; the same command runs the rest",
                       signal_name(sig), done, total, dir, running.size()));
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::fmod(s / 60, 60));
}

}  // namespace

std::string fracsim_binary() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError(fmt::format("/proc/self/exe: {}", ec.message()));
  return p.string();
}

int execute_run(const std::string& dir, const SweepRun& run) {
  const auto t0 = Clock::now();
  const pid_t pid = start_run(dir, run);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    if (interrupt_signal()) stop_runs(dir, {&run}, {pid}, 0, 1);
  }
  const int code = exit_code(status);
  // A run that failed because the same signal reached it too (Ctrl-C) is stopped, not failed.
  if (code != 0 && interrupt_signal()) stop_runs(dir, {&run}, {}, 0, 1);
  finish_run(dir, run, code, std::chrono::duration<double>(Clock::now() - t0).count());
  return code;
}

size_t run_sweep_locally(const std::string& dir, const SweepSpec& spec, int jobs) {
  std::vector<const SweepRun*> todo;
  for (const SweepRun& r : spec.runs)
    if (!run_done(dir, r)) todo.push_back(&r);
  const size_t total = spec.runs.size();
  size_t done = total - todo.size();
  std::cerr << fmt::format("sweep {}: {} runs, {} done already, {} to run with -j {}\n", spec.name,
                           total, done, todo.size(), jobs);
  const bool tty = isatty(STDERR_FILENO);
  struct Running {
    const SweepRun* run;
    Clock::time_point start;
  };
  std::map<pid_t, Running> running;
  std::vector<std::string> failed;
  double wall_sum = 0;  // of the runs finished here, for the estimate of the time left
  size_t finished_here = 0;
  size_t next = 0;
  const auto t0 = Clock::now();
  auto last_shown = t0 - std::chrono::seconds(1);
  auto show = [&](bool force) {
    if (!tty) return;
    const auto now = Clock::now();
    if (!force && now - last_shown < std::chrono::milliseconds(500)) return;
    last_shown = now;
    std::string left = "time left unknown";
    if (finished_here > 0) {
      const double per_run = wall_sum / static_cast<double>(finished_here);
      const size_t remaining = todo.size() - next;
      double s = per_run * static_cast<double>(remaining) / jobs;
      for (const auto& [pid, r] : running)
        s += std::max(0.0, per_run - std::chrono::duration<double>(now - r.start).count()) / jobs;
      left = "about " + duration(s) + " left";
    }
    std::cerr << fmt::format("\r\033[K  {}/{} runs done, {} running{}, {}", done, total,
                             running.size(),
                             failed.empty() ? "" : fmt::format(", {} failed", failed.size()), left)
              << std::flush;
  };
  // `reaped`: a run already waited for that the signal stopped.
  auto interrupted = [&](const SweepRun* reaped) {
    std::vector<const SweepRun*> runs;
    if (reaped) runs.push_back(reaped);
    std::vector<pid_t> pids;
    for (const auto& [pid, r] : running) {
      runs.push_back(r.run);
      pids.push_back(pid);
    }
    if (tty) std::cerr << "\r\033[K" << std::flush;
    stop_runs(dir, runs, pids, done, total);
  };
  while (next < todo.size() || !running.empty()) {
    if (interrupt_signal()) interrupted(nullptr);
    while (next < todo.size() && running.size() < static_cast<size_t>(jobs)) {
      const SweepRun* r = todo[next++];
      running[start_run(dir, *r)] = {r, Clock::now()};
    }
    show(false);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0) throw InternalError(fmt::format("waitpid: {}", std::strerror(errno)));
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Running r = it->second;
    const int code = exit_code(status);
    // A run that failed because the same signal reached it too (Ctrl-C) is stopped, not failed.
    if (code != 0 && interrupt_signal()) {
      running.erase(it);
      interrupted(r.run);
    }
    running.erase(it);
    const double wall = std::chrono::duration<double>(Clock::now() - r.start).count();
    finish_run(dir, *r.run, code, wall);
    wall_sum += wall;
    ++finished_here;
    if (code == 0) {
      ++done;
    } else {
      failed.push_back(r.run->name);
    }
    if (tty) std::cerr << "\r\033[K";
    if (code == 0)
      std::cerr << fmt::format("  {}/{} {} ({:.3f} s)\n", done, total, r.run->name, wall);
    else
      std::cerr << fmt::format("  failed: {} (exit {}; see {}.failed/run.log)\n", r.run->name, code,
                               run_dir(dir, *r.run));
    show(true);
  }
  if (tty) std::cerr << "\r\033[K" << std::flush;
  return failed.size();
}

}  // namespace fracsim::cli
