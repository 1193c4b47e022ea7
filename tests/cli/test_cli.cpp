// The fracsim command as a user runs it: exit codes, messages and files.
#include <doctest/doctest.h>

#include "tests/common/cli_runner.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace std::string_literals;

namespace {

using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;
const std::string kBin = FRACSIM_BINARY;

const std::string kRoot = FRACSIM_SOURCE_DIR;

std::string temp_dir() { return fracsim::testing::temp_dir("fracsim-cli"); }

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A valid one-level machine; each bad config below changes one line of it.
const std::string kMachine = R"(machine: m
root:
  clock: 1 GHz
  lfu_throughput: 4
  memory: {capacity: 64 MiB, bandwidth: 32 GB/s}
levels:
  - name: core
    fanout: 2
    memory: {capacity: 64 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s, latency: 10 ns}
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("run: the MLP on tiny.yaml in functional mode matches the reference") {
  std::string dir = temp_dir();
  CliResult r =
      run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --mode functional --out " + dir);
  CHECK(r.code == 0);
  CHECK(r.out.find("output fc3 f32[64,10]: all 640 elements match the reference bit for bit") !=
        std::string::npos);
  CHECK(r.out.find("outputs match the reference") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/stats.json"));
}

TEST_CASE("disasm | asm gives a byte-identical binary") {
  std::string dir = temp_dir();
  REQUIRE(run_fracsim("compile workloads/mlp.yaml -o " + dir + "/x.fbin --asm " + dir + "/x.fasm")
              .code == 0);
  CliResult r =
      run_fracsim("disasm " + dir + "/x.fbin | '" + kBin + "' asm - -o " + dir + "/y.fbin");
  CHECK(r.code == 0);
  std::string x = slurp(dir + "/x.fbin"), y = slurp(dir + "/y.fbin");
  CHECK(x.size() > 100);
  CHECK(x == y);
  CHECK(slurp(dir + "/x.fasm") == run_fracsim("disasm " + dir + "/x.fbin").out);
  // The compiled program names its instructions by layer: fc1 = matmul + bias add.
  const std::string fasm = slurp(dir + "/x.fasm");
  CHECK(fasm.find("\n.layer fc1\nmatmul ") != std::string::npos);
  CHECK(fasm.find("\n.layer relu1\nactivation ") != std::string::npos);
  // A hand-written .fasm without names round-trips without them.
  REQUIRE(run_fracsim("asm tests/rtl/mlp_int8.fasm -o " + dir + "/a.fbin").code == 0);
  r = run_fracsim("disasm " + dir + "/a.fbin | '" + kBin + "' asm - -o " + dir + "/b.fbin");
  CHECK(r.code == 0);
  CHECK(slurp(dir + "/a.fbin") == slurp(dir + "/b.fbin"));
  CHECK(run_fracsim("disasm " + dir + "/a.fbin").out.find(".layer") == std::string::npos);
}

TEST_CASE("config check accepts every shipped config") {
  for (const char* c : {"configs/tiny.yaml", "configs/f1.yaml"}) {
    CliResult r = run_fracsim("config check "s + c);
    CHECK_MESSAGE(r.code == 0, r.out);
  }
}

TEST_CASE("bad machine configs exit 2 naming file, line and key") {
  std::string dir = temp_dir();
  struct Bad {
    std::string name, from, to, message;
  };
  const Bad bad[] = {
      {"unknown.yaml", "    fanout: 2\n", "    fanout: 2\n    colour: red\n",
       "unknown.yaml:9: levels[0].colour: unknown key (expected one of: clock, decode_cycles, "
       "fanout, leaf, link, memory, name, pipeline_depth)"},
      {"missing.yaml", "{bandwidth: 16 GB/s, latency: 10 ns}", "{latency: 10 ns}",
       "missing.yaml:10: levels[0].link.bandwidth: missing required key"},
      {"unit.yaml", "{bandwidth: 16 GB/s,", "{bandwidth: 16 GHz,",
       "unit.yaml:10: levels[0].link.bandwidth: expected a bandwidth such as '256 GB/s', got "
       "'16 GHz'"},
      {"fanout.yaml", "    fanout: 2\n", "    fanout: 0\n",
       "fanout.yaml:8: levels[0].fanout: must be at least 1, got 0"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.name);
    std::string path = write(dir, b.name, replace(kMachine, b.from, b.to));
    CliResult r = run_fracsim("config check " + path);
    CHECK(r.code == 2);
    CHECK(r.out == "error: " + path + ":" + b.message.substr(b.name.size() + 1) + "\n");
    // run refuses it the same way, and writes nothing.
    CliResult run =
        run_fracsim("run -m " + path + " -w workloads/mlp.yaml --out " + dir + "/out-" + b.name);
    CHECK(run.code == 2);
    CHECK(run.out == r.out);
    CHECK_FALSE(std::filesystem::exists(dir + "/out-" + b.name));
  }
}

TEST_CASE("bad flags and files exit 2 with a message") {
  CliResult r = run_fracsim("run -m configs/tiny.yaml");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: fracsim run: the option '--workload' is required but missing (see "
        "'fracsim help')\n");
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --mode fast");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim run: --mode: expected functional or timing, got 'fast'\n");
  r = run_fracsim("run -m configs/nope.yaml -w workloads/mlp.yaml");
  CHECK(r.code == 2);
  CHECK(r.out == "error: configs/nope.yaml: cannot open file\n");
  r = run_fracsim("frobnicate");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim: unknown command 'frobnicate' (see 'fracsim help')\n");
  std::string dir = temp_dir();
  std::string junk = write(dir, "junk.fbin", "not a program");
  r = run_fracsim("disasm " + junk);
  CHECK(r.code == 2);
  CHECK(r.out.rfind("error: " + junk + ": ", 0) == 0);
}

TEST_CASE("a second run into the same directory replaces stats.json whole") {
  std::string dir = temp_dir();
  REQUIRE(run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --out " + dir).code == 0);
  std::string first = slurp(dir + "/stats.json");
  REQUIRE(run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --out " + dir).code == 0);
  CHECK(slurp(dir + "/stats.json") == first);  // deterministic, byte for byte
  // A failing run leaves the earlier results alone.
  CHECK(run_fracsim("run -m configs/tiny.yaml -w workloads/nope.yaml --out " + dir).code == 2);
  CHECK(slurp(dir + "/stats.json") == first);
}
