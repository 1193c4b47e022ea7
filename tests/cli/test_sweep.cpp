// `fracsim sweep` run locally: the spec's errors, sweep.csv's columns and values, and a killed
// sweep that resumes without redoing a finished run.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"

namespace fs = std::filesystem;

namespace {

using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;
const std::string kRoot = FRACSIM_SOURCE_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// The finished runs of a sweep directory (runs/NAME without a suffix).
std::set<std::string> finished_runs(const std::string& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir + "/runs")) return out;
  for (const auto& e : fs::directory_iterator(dir + "/runs")) {
    const std::string n = e.path().filename().string();
    if (n.find('.') == std::string::npos) out.insert(n);
  }
  return out;
}

// Whether a run of the sweep directory is under way (runs/NAME.partial exists).
bool run_under_way(const std::string& dir) {
  if (!fs::exists(dir + "/runs")) return false;
  for (const auto& e : fs::directory_iterator(dir + "/runs"))
    if (e.path().extension() == ".partial") return true;
  return false;
}

// A spec in a fresh folder; its paths are absolute.
std::string write_spec(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/sweep.yaml";
  std::ofstream(path) << body;
  return path;
}

std::string fmt_double(double v) { return fmt::format("{}", v); }

const std::string kTiny = kRoot + "/configs/tiny.yaml";
const std::string kMlp = kRoot + "/workloads/mlp.yaml";

// The message of a sweep whose spec is `body` (which must fail validation, exit 2).
std::string spec_error(const std::string& body) {
  const std::string dir = fracsim::testing::temp_dir("fracsim-sweep");
  CliResult r = run_fracsim("sweep " + write_spec(dir, body) + " --out " + dir + "/out");
  CHECK(r.code == 2);
  CHECK_FALSE(fs::exists(dir + "/out"));
  const std::string prefix = "error: " + dir + "/sweep.yaml:";
  REQUIRE(r.out.rfind(prefix, 0) == 0);
  return r.out.substr(prefix.size());
}

// Five functional runs of the MLP on tiny (leaf memories 64 to 256 KiB), about a second each:
// time to stop the sweep between two of them.
std::string write_five_run_spec(const std::string& dir, const std::string& name) {
  return write_spec(dir, "sweep: " + name + "\nruns:\n  - machine: " + kTiny +
                             "\n    workload: " + kMlp +
                             "\n    mode: functional\n    set:\n"
                             "      levels.core.memory.capacity: [64 KiB, "
                             "96 KiB, 128 KiB, 192 KiB, 256 KiB]\n");
}

// `fracsim sweep SPEC -j JOBS --out OUT` in the background, its output into `log`.
pid_t start_sweep(const std::string& spec, const char* jobs, const std::string& out,
                  const std::string& log, const std::string& binary = FRACSIM_BINARY) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    freopen(log.c_str(), "a", stdout);
    execl(binary.c_str(), binary.c_str(), "sweep", spec.c_str(), "-j", jobs, "--out", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("sweep: sweep.csv has one row per run, in the spec's order, with stable columns") {
  const std::string out = fracsim::testing::temp_dir("fracsim-sweep") + "/out";
  CliResult r = run_fracsim("sweep tests/cli/sweep-small.yaml -j 2 --out " + out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("sweep small: 8 runs, 0 done already, 8 to run with -j 2\n") == 0);
  CHECK(r.out.find("sweep small: 8 of 8 runs done; " + out + "/sweep.csv (8 rows)\n") !=
        std::string::npos);
  const std::vector<std::string> rows = lines_of(slurp(out + "/sweep.csv"));
  REQUIRE(rows.size() == 9);
  CHECK(rows[0] ==
        "run,config,machine,overrides,workload,batch,mode,policy,leaves,levels,cycles,seconds,"
        "inferences_per_s,util_matrix,util_vector,util_sort,attained,bytes_by_level,load_share,"
        "compute_share,reduce_share,writeback_share,hazard_share,energy_pj,"
        "energy_matrix_unit_pj,energy_vector_unit_pj,energy_sort_unit_pj,energy_lfu_pj,"
        "energy_dram_pj,energy_local_memory_pj,energy_dma_pj,energy_memory_leakage_pj,"
        "energy_logic_leakage_pj,ops,ops_per_j,wall_seconds");
  const std::vector<std::string> columns = fields_of(rows[0]);
  std::vector<std::map<std::string, std::string>> table;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> f = fields_of(rows[i]);
    REQUIRE(f.size() == columns.size());
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < f.size(); ++c) row[columns[c]] = f[c];
    table.push_back(row);
  }
  // Machine outermost, then batch; then the second block, one run per set value.
  const std::vector<std::string> expect_leaves{"1", "1", "4", "4", "16", "16", "4", "4"};
  const std::vector<std::string> expect_batch{"1", "8", "1", "8", "1", "8", "64", "64"};
  for (size_t i = 0; i < table.size(); ++i) {
    CHECK(table[i]["leaves"] == expect_leaves[i]);
    CHECK(table[i]["batch"] == expect_batch[i]);
    CHECK(table[i]["mode"] == "timing");
    // The configs' own: the scale series names none (search); tiny names halving.
    CHECK(table[i]["policy"] == (i < 6 ? "search" : "halving"));
    CHECK(table[i]["workload"] == "../../workloads/mlp.yaml");
    CHECK(std::stod(table[i]["wall_seconds"]) > 0);
  }
  CHECK(table[0]["run"] == "leaves-0001-mlp-b1-timing-ee6b3951f0");
  CHECK(table[0]["config"] == "../../configs/scale/leaves-0001.yaml");
  CHECK(table[6]["overrides"] == "levels.core.memory.capacity=64 KiB");
  CHECK(table[7]["overrides"] == "levels.core.memory.capacity=128 KiB");

  // tiny's row, against its own stats.json (the MLP at batch 64: 2793731 cycles, as the run's
  // tests have it) and by hand.
  std::map<std::string, std::string>& tiny = table[6];
  std::ifstream in(out + "/runs/" + tiny["run"] + "/stats.json");
  const nlohmann::json stats = nlohmann::json::parse(in);
  CHECK(tiny["machine"] == "tiny");
  CHECK(tiny["levels"] == "2");
  CHECK(tiny["cycles"] == "2793731");
  const double seconds = 2793731000.0 * 1e-12;  // picoseconds at 1 GHz, as stats.json has it
  CHECK(tiny["seconds"] == fmt_double(seconds));
  CHECK(tiny["inferences_per_s"] == fmt_double(64 / seconds));
  CHECK(tiny["util_matrix"] == fmt_double(stats["utilization"]["matrix"].get<double>()));
  CHECK(tiny["util_sort"] == "0");
  double bounds = 0;
  for (const auto& l : stats["layers"]) bounds += l["bound"].get<double>();
  CHECK(tiny["attained"] == fmt_double(bounds / 2793731));
  // Loaded + stored bytes: cluster 15130704 + 4196864, core 18933408 + 4214784.
  CHECK(tiny["bytes_by_level"] == "cluster=19327568;core=23148192");
  const auto& t1 = stats["levels"][1]["totals"];
  const auto& t2 = stats["levels"][2]["totals"];
  const double load = t1["load_cycles"].get<double>() + t2["load_cycles"].get<double>();
  const double compute = t2["execute_cycles"].get<double>();
  const double wb = t1["writeback_cycles"].get<double>() + t2["writeback_cycles"].get<double>();
  const double hazard = t1["hazard_cycles"].get<double>() + t2["hazard_cycles"].get<double>();
  const double busy = load + compute + wb + hazard;  // no reduce cycles in the MLP
  CHECK(tiny["load_share"] == fmt_double(load / busy));
  CHECK(tiny["compute_share"] == fmt_double(compute / busy));
  CHECK(tiny["reduce_share"] == "0");
  CHECK(tiny["writeback_share"] == fmt_double(wb / busy));
  CHECK(tiny["hazard_share"] == fmt_double(hazard / busy));
  CHECK(tiny["energy_pj"] == "4583295694.6");
  CHECK(tiny["energy_matrix_unit_pj"] ==
        fmt_double(stats["energy_pj"]["by_component"]["matrix_unit"].get<double>()));
  const double ops = t2["matrix_ops"].get<double>() + t2["vector_ops"].get<double>();
  CHECK(tiny["ops"] == fmt_double(ops));
  CHECK(tiny["ops_per_j"] == fmt_double(ops / (4583295694.6 * 1e-12)));

  // Each run's directory: the run's own files and the sweep's record.
  for (const auto& row : table)
    for (const char* f : {"stats.json", "layers.csv", "run.log", "run.json"})
      CHECK(fs::exists(out + "/runs/" + row.at("run") + "/" + f));
  // Run again: nothing to do, the same CSV but for nothing.
  const std::string before = slurp(out + "/sweep.csv");
  r = run_fracsim("sweep tests/cli/sweep-small.yaml --out " + out);
  CHECK(r.code == 0);
  CHECK(r.out.find("sweep small: 8 runs, 8 done already, 0 to run with -j ") == 0);
  CHECK(slurp(out + "/sweep.csv") == before);
  // --gather rewrites it from the runs alone.
  fs::remove(out + "/sweep.csv");
  r = run_fracsim("sweep --gather " + out);
  CHECK(r.code == 0);
  CHECK(r.out == "sweep small: 8 of 8 runs done; " + out + "/sweep.csv (8 rows)\n");
  CHECK(slurp(out + "/sweep.csv") == before);
}

TEST_CASE("sweep: a killed sweep keeps its finished runs, the rerun does only the others") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-sweep");
  const std::string spec = write_five_run_spec(dir, "killed");
  const std::string out = dir + "/out";
  const pid_t pid = start_sweep(spec, "1", out, dir + "/first.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished_runs(out).size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  const std::set<std::string> first = finished_runs(out);
  REQUIRE(first.size() >= 2);
  REQUIRE(first.size() < 5);  // killed before the end
  // The finished runs' files as they are, to show that the rerun leaves them alone.
  std::map<std::string, std::pair<ino_t, int64_t>> files;
  for (const std::string& n : first)
    for (const char* f : {"stats.json", "run.json", "layers.csv"}) {
      struct stat st {};
      const std::string p = out + "/runs/" + n + "/" + f;
      REQUIRE(stat(p.c_str(), &st) == 0);
      files[p] = {st.st_ino,
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    }

  CliResult r = run_fracsim("sweep " + spec + " -j 2 --out " + out);
  CHECK(r.code == 0);
  const size_t left = 5 - first.size();
  CHECK(r.out.find("sweep killed: 5 runs, " + std::to_string(first.size()) + " done already, " +
                   std::to_string(left) + " to run with -j 2\n") == 0);
  // Exactly the others ran: one progress line each.
  size_t ran = 0;
  for (size_t at = 0; (at = r.out.find("/5 tiny-mlp-functional-", at)) != std::string::npos; ++at)
    ++ran;
  CHECK(ran == left);
  for (const std::string& n : first) CHECK(r.out.find(n) == std::string::npos);
  for (const auto& [p, id] : files) {
    struct stat st {};
    REQUIRE(stat(p.c_str(), &st) == 0);
    CHECK(st.st_ino == id.first);
    CHECK(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec == id.second);
  }
  // Every run exactly once, and no partial run left behind.
  const std::set<std::string> all = finished_runs(out);
  CHECK(all.size() == 5);
  for (const auto& e : fs::directory_iterator(out + "/runs"))
    CHECK(e.path().filename().string().find('.') == std::string::npos);
  const std::vector<std::string> rows = lines_of(slurp(out + "/sweep.csv"));
  REQUIRE(rows.size() == 6);
  std::set<std::string> named;
  for (size_t i = 1; i < rows.size(); ++i) named.insert(fields_of(rows[i])[0]);
  CHECK(named == all);
}

TEST_CASE("sweep: a fracsim replaced on disk while a sweep runs changes none of its runs") {
  // An architect rebuilds fracsim while a long sweep runs: the runs still to come run the
  // sweep's own binary, not the new file (here a script that fails), and not a missing path.
  const std::string dir = fracsim::testing::temp_dir("fracsim-sweep");
  const std::string binary = dir + "/fracsim";
  fs::copy_file(FRACSIM_BINARY, binary);
  const std::string spec = write_five_run_spec(dir, "rebuilt");
  const std::string out = dir + "/out";
  const pid_t pid = start_sweep(spec, "1", out, dir + "/sweep.log", binary);
  // Replaced as soon as the first run has started.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!run_under_way(out) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(run_under_way(out));
  std::ofstream(dir + "/other") << "#!/bin/sh\nexit 3\n";
  fs::permissions(dir + "/other", fs::perms::owner_all);
  fs::rename(dir + "/other", binary);
  int status = 0;
  waitpid(pid, &status, 0);
  INFO(slurp(dir + "/sweep.log"));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(finished_runs(out).size() == 5);
}

TEST_CASE("sweep: spec errors name the file, the line and the key") {
  const std::string head = "sweep: bad\nruns:\n  - machine: " + kTiny + "\n    workload: " + kMlp;
  CHECK(spec_error(head + "\n    bach: 3\n") ==
        "5: runs[0].bach: unknown key (expected one of: batch, machine, mode, policy, set, "
        "workload)\n");
  CHECK(spec_error(head + "\n    batch: [1, -2]\n") ==
        "5: runs[0].batch: expected a positive integer, got '-2'\n");
  CHECK(spec_error(head + "\n    mode: fast\n") ==
        "5: runs[0].mode: expected timing or functional, got 'fast'\n");
  CHECK(spec_error(head + "\n    set: {levels.core.fanout: [2, 0]}\n") ==
        "5: runs[0].set: " + kTiny +
            ": --set levels.core.fanout=0: levels[1].fanout: must be at least 1, got 0\n");
  CHECK(spec_error(head + "\n    set: {levels.core.fanot: 2}\n") ==
        "5: runs[0].set: " + kTiny +
            ": --set levels.core.fanot=2: levels[1].fanot: unknown key (expected one of: "
            "clock, decode_cycles, fanout, hold_partial_sums, keep_outputs, leaf, link, "
            "memory, name, overlap, pipeline_depth, prefetch, resident_partial_sums)\n");
  CHECK(spec_error(head + "\n    set: {decomposer: halving}\n") ==
        "5: runs[0].set.decomposer: give decomposer policies with the block's `policy` key\n");
  CHECK(spec_error(head + "\n    policy: [halving, greedy]\n") ==
        "5: runs[0].policy: 'greedy': " + kTiny +
            ": --set decomposer=greedy: decomposer: unknown decomposer 'greedy' (expected "
            "halving or search)\n");
  CHECK(spec_error(head + "\n    batch: []\n") ==
        "5: runs[0].batch: must list at least one value\n");
  const std::string twice = spec_error(head + "\n  - machine: " + kTiny +
                                       "\n    workload: " + kMlp + "\n    mode: timing\n");
  CHECK(twice.rfind("5: runs[1]: run tiny-mlp-timing-", 0) == 0);
  CHECK(twice.find(" again (runs[0] has it already)\n") == twice.size() - 32);
  CHECK(spec_error("sweep: bad\nruns:\n  - machine: nope.yaml\n    workload: " + kMlp + "\n")
            .find("3: runs[0].machine: ") == 0);
  CHECK(spec_error("sweep: bad\nruns:\n  - machine: " + kTiny + "\n    workload: nope.yaml\n") ==
        "4: runs[0].workload: nope.yaml: no such file\n");
  CHECK(spec_error("sweep: bad\nruns:\n  - machine: " + kTiny + "\n    workload: " + kRoot +
                   "/workloads/sort.onnx\n    batch: 8\n") ==
        "5: runs[0].batch: " + kRoot +
            "/workloads/sort.onnx: node 'topk' (TopK): --batch 8: it sorts along dim 0, which "
            "carries the batch\n");
  CHECK(spec_error("sweep: bad\nruns:\n  - workload: " + kMlp + "\n") ==
        "3: runs[0].machine: missing required key\n");
  CHECK(spec_error("sweep: bad\nruns: []\n") ==
        "2: runs: expected a list of run blocks (each a mapping of axes)\n");
  CHECK(spec_error("runs: []\n") == "1: sweep: missing required key\n");
}

TEST_CASE("sweep: flags that do not go together, and --gather without a sweep") {
  CliResult r = run_fracsim("sweep tests/cli/sweep-small.yaml --no-wait");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim sweep: --no-wait needs --slurm\n");
  r = run_fracsim("sweep tests/cli/sweep-small.yaml --partition debug");
  CHECK(r.out == "error: fracsim sweep: --partition needs --slurm\n");
  r = run_fracsim("sweep tests/cli/sweep-small.yaml --slurm -j 2");
  CHECK(r.out == "error: fracsim sweep: -j applies to local sweeps, not to --slurm\n");
  r = run_fracsim("sweep tests/cli/sweep-small.yaml -j 0");
  CHECK(r.out == "error: fracsim sweep: -j: expected a positive number of runs at once, got 0\n");
  r = run_fracsim("sweep");
  CHECK(r.out == "error: fracsim sweep: give a sweep spec (see 'fracsim sweep --help')\n");
  const std::string dir = fracsim::testing::temp_dir("fracsim-sweep");
  r = run_fracsim("sweep --gather " + dir);
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + ": no sweep here (no sweep.json; 'fracsim sweep SPEC --out " +
                     dir + "' makes one)\n");
  r = run_fracsim("sweep --gather " + dir + " tests/cli/sweep-small.yaml");
  CHECK(r.out ==
        "error: fracsim sweep: --gather DIR takes no SPEC and no other option but "
        "--plots\n");
}

TEST_CASE("sweep: SIGTERM stops the runs under way and keeps only complete ones, exit 143") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-sweep");
  const std::string spec = write_five_run_spec(dir, "stopped");
  const std::string out = dir + "/out";
  const std::string log = dir + "/first.log";
  const pid_t pid = start_sweep(spec, "2", out, log);
  // One run finished and another under way.
  auto under_way = [&] { return run_under_way(out); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((finished_runs(out).empty() || !under_way()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(under_way());
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  const std::set<std::string> done = finished_runs(out);
  REQUIRE(!done.empty());
  REQUIRE(done.size() < 5);
  // Only finished runs are left, each with all of its files; nothing hidden, no temporaries.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(out + "/runs")) {
    ++entries;
    const std::string n = e.path().filename().string();
    CHECK_MESSAGE(n.find('.') == std::string::npos, n);
    std::set<std::string> files;
    for (const auto& f : fs::directory_iterator(e.path())) files.insert(f.path().filename());
    CHECK(files == std::set<std::string>{"layers.csv", "run.json", "run.log", "stats.json"});
    CHECK(nlohmann::json::parse(slurp(e.path() / "stats.json"))["cycles"].is_number());
  }
  CHECK(entries == done.size());
  CHECK_FALSE(fs::exists(out + "/sweep.csv"));
  const std::string text = slurp(log);
  const std::string head = fmt::format(
      "error: fracsim sweep: interrupted by SIGTERM: {} of 5 runs done, kept in {}/runs; ",
      done.size(), out);
  const size_t at = text.find(head);
  REQUIRE_MESSAGE(at != std::string::npos, text);
  const std::string rest = text.substr(at + head.size());
  CHECK((rest == "1 under way stopped and removed; the same command runs the rest\n" ||
         rest == "2 under way stopped and removed; the same command runs the rest\n"));

  // The same command runs the rest.
  CliResult r = run_fracsim("sweep " + spec + " -j 2 --out " + out);
  CHECK(r.code == 0);
  CHECK(finished_runs(out).size() == 5);
}
