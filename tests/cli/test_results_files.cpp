// Results files: the same inputs give the same bytes (runs, traces, sweeps at any -j), and a
// write that fails leaves nothing behind (sim/cli/atomic_file.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"

namespace fs = std::filesystem;

namespace {

using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every entry under `dir`, as paths relative to it.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// Each line of a CSV without its last column.
std::string without_last_column(const std::string& csv) {
  std::istringstream in(csv);
  std::string line, out;
  while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

}  // namespace

TEST_CASE("results: two runs of a workload give byte-identical stats.json, layers.csv and trace") {
  struct Case {
    std::string program, flags;
  };
  const Case cases[] = {
      {"workloads/mlp.yaml", "--mode functional"},
      {"workloads/kmeans.onnx", ""},
      {"tests/rtl/int_vector.fasm", "--mode functional"},
  };
  const std::string dir = fracsim::testing::temp_dir("fracsim-results");
  for (const Case& c : cases) {
    CAPTURE(c.program);
    std::string bytes[2][3];
    for (int i = 0; i < 2; ++i) {
      const std::string out = dir + "/run" + std::to_string(i);
      const CliResult r = run_fracsim("run -m configs/tiny.yaml -w " + c.program + " " + c.flags +
                                      " --out " + out + " --trace " + out + ".trace.json");
      REQUIRE_MESSAGE(r.code == 0, r.out);
      bytes[i][0] = slurp(out + "/stats.json");
      bytes[i][1] = slurp(out + "/layers.csv");
      bytes[i][2] = slurp(out + ".trace.json");
      // Nothing but the results: no temporary left beside them.
      CHECK(listing(out) == std::set<std::string>{"layers.csv", "stats.json"});
      fs::remove_all(out);
      fs::remove(out + ".trace.json");
    }
    CHECK(bytes[0][0].size() > 1000);
    CHECK(bytes[0][1].find('\n') != std::string::npos);
    CHECK(bytes[0][2].size() > 100);
    for (int k = 0; k < 3; ++k) CHECK(bytes[0][k] == bytes[1][k]);
  }
}

TEST_CASE("results: a sweep gives the same sweep.csv at -j 1 and -j 2 (wall_seconds aside)") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-results");
  const std::string root = FRACSIM_SOURCE_DIR;
  const std::string spec = dir + "/s.yaml";
  std::ofstream(spec) << "sweep: determinism\nruns:\n  - machine: " << root
                      << "/configs/tiny.yaml\n    workload: " << root
                      << "/workloads/mlp.yaml\n    batch: [1, 8]\n    set:\n"
                         "      levels.core.memory.capacity: [64 KiB, 128 KiB]\n";
  std::string csv[2];
  for (int j = 1; j <= 2; ++j) {
    const std::string out = dir + "/j" + std::to_string(j);
    const CliResult r = run_fracsim("sweep " + spec + " -j " + std::to_string(j) + " --out " + out);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    csv[j - 1] = slurp(out + "/sweep.csv");
  }
  // The header and four rows; wall_seconds, the last column, is measured, not simulated.
  CHECK(std::count(csv[0].begin(), csv[0].end(), '\n') == 5);
  CHECK(csv[0].substr(csv[0].find('\n') - 13, 13) == ",wall_seconds");
  CHECK(without_last_column(csv[0]) == without_last_column(csv[1]));
}

TEST_CASE("results: a write that fails leaves neither a temporary nor a partial file") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-results");
  // -o names a folder: the bytes reach the temporary, the rename fails, the temporary goes.
  fs::create_directories(dir + "/x.fbin");
  CliResult r = run_fracsim("compile workloads/mlp.yaml -o " + dir + "/x.fbin");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + "/x.fbin: cannot write file (Is a directory)\n");
  CHECK(listing(dir) == std::set<std::string>{"x.fbin"});
  // A folder that does not exist: the temporary cannot be made.
  r = run_fracsim("isa doc -o " + dir + "/none/isa.md");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + "/none/isa.md: cannot write file (No such file or directory)\n");
  // The trace cannot be written: the run fails before it starts (a 1 ns time limit would have
  // ended it otherwise), and leaves no --out folder.
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --max-sim-time 1ns --out " + dir +
                  "/out --trace " + dir + "/none/trace.json");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: " + dir + "/none/trace.json: cannot write file (No such file or directory)\n");
  CHECK(listing(dir) == std::set<std::string>{"x.fbin"});
  // A file where the --out folder should be: found before the run starts, too.
  std::ofstream(dir + "/file") << "x";
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --max-sim-time 1ns --out " + dir +
                  "/file/out");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + "/file/out: cannot create directory (Not a directory)\n");
  // The trace is a folder.
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --max-sim-time 1ns --out " + dir +
                  "/out --trace " + dir);
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + ": cannot write file (Is a directory)\n");
  CHECK(listing(dir) == std::set<std::string>{"file", "x.fbin"});
  // A device is written in place, never replaced by a renamed file.
  r = run_fracsim("compile workloads/mlp.yaml -o /dev/null");
  CHECK(r.code == 0);
  CHECK(fs::is_character_file("/dev/null"));
  // A good file stays as it was when a later write to it fails: the old bytes, not a part.
  const std::string good = dir + "/good.fasm";
  REQUIRE(run_fracsim("compile workloads/mlp.yaml -o " + dir + "/m.fbin --asm " + good).code == 0);
  const std::string before = slurp(good);
  r = run_fracsim("compile workloads/nope.yaml -o " + dir + "/m.fbin --asm " + good);
  CHECK(r.code == 2);
  CHECK(slurp(good) == before);
}

TEST_CASE("results: names with quotes, backslashes and non-ASCII are escaped in every file") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-results");
  const std::string level = "co\"re\\\xc3\xbc";  // co"re\ü
  const std::string layer = "fc\"1\\\xc3\xa9";   // fc"1\é
  std::ofstream(dir + "/m.yaml") << R"(machine: m
root:
  clock: 1 GHz
  lfu_throughput: 4
  memory: {capacity: 64 MiB, bandwidth: 32 GB/s}
levels:
  - name: "co\"re\\)" << "\xc3\xbc" << R"("
    fanout: 2
    memory: {capacity: 64 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s, latency: 10 ns}
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";
  std::ofstream(dir + "/w.yaml") << R"(workload: w
inputs:
  x: {shape: [4, 8], dtype: f32}
layers:
  - {name: "fc\"1\\)" << "\xc3\xa9" << R"(", type: dense, input: x, units: 16}
outputs: ["fc\"1\\)" << "\xc3\xa9" << R"("]
)";
  const CliResult r = run_fracsim("run -m " + dir + "/m.yaml -w " + dir + "/w.yaml --out " + dir +
                                  "/out --trace " + dir + "/trace.json");
  REQUIRE_MESSAGE(r.code == 0, r.out);
  const auto stats = nlohmann::json::parse(slurp(dir + "/out/stats.json"));
  CHECK(stats["levels"][1]["name"] == level);
  CHECK(stats["nodes"][1]["path"] == "root." + level + "0");
  CHECK(stats["layers"][0]["name"] == layer);
  CHECK(stats["config"]["levels"][0]["name"] == level);
  const auto trace = nlohmann::json::parse(slurp(dir + "/trace.json"));
  std::set<std::string> processes;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
  CHECK(processes.count("root." + level + "0") == 1);
  // RFC 4180: a field holding a quote is quoted, its quotes doubled; the backslash and the
  // UTF-8 bytes stay as they are.
  const std::string csv = slurp(dir + "/out/layers.csv");
  CHECK(csv.find("\n\"fc\"\"1\\\xc3\xa9\",matmul_bias_act,") != std::string::npos);
}
