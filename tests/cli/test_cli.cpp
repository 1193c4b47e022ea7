// The fracsim command as a user runs it: exit codes, messages and files.
#include <doctest/doctest.h>

#include "tests/common/cli_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

using namespace std::string_literals;

namespace fs = std::filesystem;

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

TEST_CASE("run --layers=N prints the N layers with most cycles, layers.csv has every layer") {
  // The MLP on tiny (4 leaves of 4x4 MACs: 128 ops per cycle): fc2's bound is its
  // 2 * 64 * 1024 * 1024 ops / 128 = 1048576 cycles of compute, fc1's 2 * 64 * 784 * 1024 /
  // 128 = 802816; together they take most of the time.
  const std::string dir = temp_dir();
  CliResult r =
      run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --layers=2 --out " + dir);
  REQUIRE(r.code == 0);
  // Each dense layer is one op with its bias add and ReLU fused.
  CHECK(r.out.find("\n  fc2   matmul_bias_act         1540893  55.2%      1048576 "
                   "compute:matrix      68.0%   68.0%\n  fc1   matmul_bias_act         1222046  "
                   "43.7%       802816 compute:matrix      65.7%   65.7%\n  2 of 3 layers; total "
                   "2793731 cycles, sum of the bounds") != std::string::npos);
  const std::string csv = slurp(dir + "/layers.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);  // the header and fc1 ... fc3
  CHECK(csv.find("\nfc3,matmul_bias_act,1,2,2793731,30792,") != std::string::npos);
  // Without --layers the table is not printed; the CSV is written all the same.
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --out " + dir);
  CHECK(r.out.find("sum of the bounds") == std::string::npos);
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --layers=0 --out " + dir);
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim run: --layers: expected a positive number of layers, got '0'\n");
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
  // The compiled program names its instructions by layer: fc1 = matmul + bias add + ReLU,
  // fused by default into one op; unfused, the matmul and the ReLU are layers of their own.
  const std::string fasm = slurp(dir + "/x.fasm");
  CHECK(fasm.find("\n.layer fc1\nmatmul_bias_act ") != std::string::npos);
  REQUIRE(run_fracsim("compile workloads/mlp.yaml --no-fuse -o " + dir + "/u.fbin --asm " + dir +
                      "/u.fasm")
              .code == 0);
  const std::string unfused = slurp(dir + "/u.fasm");
  CHECK(unfused.find("\n.layer fc1\nmatmul ") != std::string::npos);
  CHECK(unfused.find("\n.layer relu1\nactivation ") != std::string::npos);
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
       "fanout, hold_partial_sums, keep_outputs, leaf, link, memory, name, overlap, "
       "pipeline_depth, prefetch, resident_partial_sums)"},
      {"missing.yaml", "{bandwidth: 16 GB/s, latency: 10 ns}", "{latency: 10 ns}",
       "missing.yaml:10: levels[0].link.bandwidth: missing required key"},
      {"unit.yaml", "{bandwidth: 16 GB/s,", "{bandwidth: 16 GHz,",
       "unit.yaml:10: levels[0].link.bandwidth: expected a bandwidth such as '256 GB/s', got "
       "'16 GHz'"},
      {"fanout.yaml", "    fanout: 2\n", "    fanout: 0\n",
       "fanout.yaml:8: levels[0].fanout: must be at least 1, got 0"},
      {"resident.yaml", "    fanout: 2\n", "    fanout: 2\n    resident_partial_sums: yes\n",
       "resident.yaml:9: levels[0].resident_partial_sums: expected true or false, got 'yes'"},
      {"overlap.yaml", "    fanout: 2\n", "    fanout: 2\n    overlap: often\n",
       "overlap.yaml:9: levels[0].overlap: expected true or false, got 'often'"},
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
        "'fracsim run --help')\n");
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

TEST_CASE("fracsim COMMAND --help prints the synopsis and the options, exit 0") {
  CliResult r = run_fracsim("run --help");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("usage: fracsim run -m CONFIG -w PROGRAM [options]\n", 0) == 0);
  // Boost.Program_options' own lines, from the options `run` parses.
  for (const char* line : {
           "  -m [ --machine ] arg  machine config (.yaml)\n",
           "  --mode arg (=timing)  functional or timing\n",
           "  --no-fold             simulate every node of a timing run (same results, slower)\n",
           "  --batch arg           N: the workload at batch N, a positive integer (every input's "
           "leading dim \n",
           "  -h [ --help ]         print this help\n",
       }) {
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(run_fracsim("run -h").out == r.out);
  CHECK(run_fracsim("help run").out == r.out);
  // --help wins over missing required options.
  CHECK(run_fracsim("run -m configs/tiny.yaml --help").out == r.out);

  r = run_fracsim("compile --help");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("usage: fracsim compile WORKLOAD -o X.fbin [options]\n", 0) == 0);
  CHECK(r.out.find("  -o [ --output ] arg   the binary program (.fbin) to write\n") !=
        std::string::npos);
  for (const char* c : {"asm", "disasm", "config check", "isa list", "isa doc", "verify"}) {
    CAPTURE(c);
    r = run_fracsim(std::string(c) + " --help");
    CHECK(r.code == 0);
    CHECK(r.out.rfind("usage: fracsim "s + c, 0) == 0);
    CHECK(r.out.find("  -h [ --help ]") != std::string::npos);
  }
}

TEST_CASE("fracsim help lists every command with its summary") {
  const CliResult r = run_fracsim("help");
  CHECK(r.code == 0);
  for (const char* line : {
           "  run            run a program (.fbin, .fasm) or workload (.yaml, .onnx) on a "
           "machine\n",
           "  compile        compile a workload (.yaml, .onnx) to a binary program\n",
           "  asm            assemble a text program\n",
           "  disasm         disassemble a binary program\n",
           "  config check   check a machine config and print its shape\n",
           "  config schema  the JSON Schema of machine configs, generated from the declaration of "
           "every key\n",
           "  config doc     the reference of every config key in Markdown (sim/README.md holds it "
           "between markers)\n",
           "  isa list       one line per op of the instruction set\n",
           "  isa doc        the op reference in Markdown (isa/ops/README.md is its output)\n",
           "  isa check      check op definitions (the form of isa/ops/*.yaml) against the "
           "shipped ops\n",
           "  verify         run directed and random vectors through an RTL unit and the "
           "reference\n",
           "  help           list the commands, or describe one\n",
       }) {
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(run_fracsim("--help").out == r.out);
  CHECK(run_fracsim("-h").out == r.out);
  const CliResult bare = run_fracsim("");
  CHECK(bare.code == 2);
  CHECK(bare.out == r.out);
  CliResult bad = run_fracsim("isa frob");
  CHECK(bad.code == 2);
  CHECK(bad.out ==
        "error: fracsim isa: usage: fracsim isa list | fracsim isa doc [-o FILE] | fracsim isa "
        "check FILE...\n");
  bad = run_fracsim("help frob");
  CHECK(bad.code == 2);
  CHECK(bad.out == "error: fracsim help: unknown command 'frob' (see 'fracsim help')\n");
  bad = run_fracsim("compile workloads/mlp.yaml -o /dev/null --frob");
  CHECK(bad.code == 2);
  CHECK(bad.out ==
        "error: fracsim compile: unrecognised option '--frob' (see 'fracsim compile --help')\n");
}

TEST_CASE("--batch must be a positive integer") {
  for (const char* n : {"0", "-3", "eight", "8x"}) {
    CAPTURE(n);
    CliResult r = run_fracsim("compile workloads/mlp.yaml -o /dev/null --batch "s + n);
    CHECK(r.code == 2);
    CHECK(r.out ==
          "error: fracsim compile: --batch: expected a positive integer, got '"s + n + "'\n");
  }
  CliResult r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --batch 0");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim run: --batch: expected a positive integer, got '0'\n");
  // A compiled program has its batch.
  std::string dir = temp_dir();
  REQUIRE(run_fracsim("compile workloads/mlp.yaml -o " + dir + "/x.fbin").code == 0);
  r = run_fracsim("run -m configs/tiny.yaml -w " + dir + "/x.fbin --batch 8");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir +
                     "/x.fbin: --batch applies to a workload (.yaml, .onnx), not to a compiled "
                     "program\n");
  // A workload that cannot take one names the node and the reason.
  r = run_fracsim("compile workloads/sort.onnx -o /dev/null --batch 2");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: workloads/sort.onnx: node 'topk' (TopK): --batch 2: it sorts along dim 0, which "
        "carries the batch\n");
}

TEST_CASE("run --batch 8 runs the MLP at batch 8: its work is 8 samples'") {
  std::string dir = temp_dir();
  CliResult r =
      run_fracsim("run --batch 8 -m configs/tiny.yaml -w workloads/mlp.yaml --out " + dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("fracsim: mlp on tiny (2 levels, 4 leaves), timing mode\n", 0) == 0);
  const std::string stats = slurp(dir + "/stats.json");
  // 784-1024-1024-10 at batch 8: 2 ops per MAC; the bias adds and the ReLUs one op per element.
  const int64_t macs = 8 * (784 * 1024 + 1024 * 1024 + 1024 * 10);
  const int64_t elementwise = 8 * (1024 + 1024 + 10) + 8 * (1024 + 1024);
  CHECK(stats.find("\"program\": \"mlp\"") != std::string::npos);
  CHECK(stats.find("\"matrix_ops\": " + std::to_string(2 * macs) + ",") != std::string::npos);
  CHECK(stats.find("\"vector_ops\": " + std::to_string(elementwise) + ",") != std::string::npos);
  // The compiled program's input is [8, 784].
  REQUIRE(run_fracsim("compile workloads/mlp.yaml --batch 8 -o " + dir + "/x.fbin --asm " + dir +
                      "/x.fasm")
              .code == 0);
  CHECK(slurp(dir + "/x.fasm").find(".symbol input x f32@0x0[8,784:784,1]\n") != std::string::npos);
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

TEST_CASE("run: SIGTERM during the simulation ends it with exit 143 and writes no file") {
  const std::string out = fracsim::testing::temp_dir("fracsim-sigterm");
  const std::string log = out + "/../" + fs::path(out).filename().string() + ".log";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    freopen(log.c_str(), "a", stdout);
    // AlexNet in functional mode on f1 simulates for about 20 s: the signal comes in the
    // middle, before any file is written.
    const std::string root = FRACSIM_SOURCE_DIR;
    execl(FRACSIM_BINARY, FRACSIM_BINARY, "run", "-m", (root + "/configs/f1.yaml").c_str(), "-w",
          (root + "/workloads/alexnet.yaml").c_str(), "--mode", "functional", "--out", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "error: interrupted by SIGTERM (no file is left half-written)\n");
  CHECK(fs::is_empty(out));
  fs::remove(log);
}
