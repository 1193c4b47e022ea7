// `fracsim verify` and `fracsim run --backend rtl` as a user runs them.
#include <doctest/doctest.h>

#include "tests/common/cli_runner.h"

#include "isa/assembly.h"
#include "isa/reference.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace isa = fracsim::isa;
using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;
const std::string kBin = FRACSIM_BINARY;

const std::string kRoot = FRACSIM_SOURCE_DIR;
const std::string kWorkload = "tests/rtl/int_matmul.yaml";

std::string temp_dir() { return fracsim::testing::temp_dir("fracsim-rtl"); }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// stats.json without what differs by backend: the config's backend, the wall time and the
// counts of instructions run on RTL (asserted on their own).
std::string backend_neutral(std::string stats) {
  stats = std::regex_replace(stats, std::regex("\"backend\": \"rtl\""), "\"backend\": \"model\"");
  stats = std::regex_replace(stats, std::regex("\"seconds\": [0-9.e+-]+"), "");
  return std::regex_replace(stats, std::regex("\"rtl_[a-z]+_instructions\": [0-9]+"), "");
}

// The leaf level's total of counter `name` in stats.json.
uint64_t leaf_total(const std::string& stats, const std::string& name) {
  const nlohmann::json j = nlohmann::json::parse(stats);
  return j.at("levels").back().at("totals").at(name).get<uint64_t>();
}

std::string cycles_line(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("  cycles +[0-9]+ [^\n]*")));
  return m.str();
}

}  // namespace

TEST_CASE("fracsim verify --unit matrix --vectors 1000 passes on every built size") {
  const CliResult r =
      run_fracsim("verify --unit matrix --vectors 1000 --wave /nonexistent/never.vcd");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK_FALSE(has(r.out, "wave"));  // no failing vector, no wave
  CHECK(has(r.out, "fracsim verify: matrix unit, seed 1, 1000 random vectors per size"));
  CHECK(std::regex_search(r.out, std::regex("  4x4: 1019 vectors \\(19 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(std::regex_search(r.out, std::regex("16x16: 1019 vectors \\(19 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(has(r.out, "all results bit-exact; all cycles equal the model's formula plus stalls"));
}

TEST_CASE("fracsim verify --unit vector --vectors 1000 passes on every built lane count") {
  const CliResult r =
      run_fracsim("verify --unit vector --vectors 1000 --wave /nonexistent/never.vcd");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "fracsim verify: vector unit, seed 1, 1000 random vectors per lane count"));
  CHECK(std::regex_search(r.out, std::regex("   8 lanes: 1027 vectors \\(27 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(std::regex_search(r.out, std::regex("  32 lanes: 1027 vectors \\(27 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(has(r.out, "all results bit-exact; all cycles equal the model's formula plus stalls"));
  CHECK_FALSE(has(r.out, "wave"));  // no failing vector, no wave
}

TEST_CASE("fracsim verify --unit sort --vectors 1000 passes on every built width") {
  const CliResult r = run_fracsim("verify --unit sort --vectors 1000");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "fracsim verify: sort unit (merge), seed 1, 1000 random vectors per width"));
  CHECK(std::regex_search(r.out, std::regex("  width 4: 1014 vectors \\(14 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(std::regex_search(r.out, std::regex("  width 8: 1014 vectors \\(14 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(has(r.out, "all results bit-exact; all cycles equal the model's formula plus stalls"));
}

namespace {

struct CoverageLine {
  uint64_t covered = 0, total = 0;
};

// The "  KIND  C of  T points (P%)" lines of a `verify --coverage` summary, by kind.
std::map<std::string, CoverageLine> coverage_summary(const std::string& out) {
  std::map<std::string, CoverageLine> m;
  const std::regex line("\n  ([a-z]+) +([0-9]+) of +([0-9]+) points \\([0-9.]+%\\)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    m[(*it)[1]] = {std::stoull((*it)[2]), std::stoull((*it)[3])};
  return m;
}

}  // namespace

TEST_CASE("fracsim verify --coverage runs the instrumented unit and reports its coverage") {
  const std::string d = temp_dir();
  struct Expect {
    const char* unit;
    const char* report;  // the unit's line of the report
    const char* size;    // as the coverage line names it
    uint64_t line, branch, toggle;
  };
  for (const Expect& e :
       {Expect{"matrix", "  4x4: 1019 vectors (19 directed", "4x4 matrix", 13, 24, 288},
        Expect{"vector", "   8 lanes: 1027 vectors (27 directed", "8 lanes vector", 27, 2, 1358},
        Expect{"sort", "  width 4: 1014 vectors (14 directed", "width 4 sort", 3, 4, 401}}) {
    CAPTURE(e.unit);
    const std::string dir = d + "/" + e.unit;
    const CliResult r =
        run_fracsim(std::string("verify --unit ") + e.unit + " --coverage --coverage-out " + dir);
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, e.report));
    CHECK(has(r.out, std::string("coverage of the ") + e.size +
                         " unit (verilator --coverage): " + dir + "/coverage.dat\n"));
    CHECK(has(r.out, "  annotated source: verilator_coverage --annotate " + dir + "/annotated " +
                         dir + "/coverage.dat\n"));
    CHECK(slurp(dir + "/coverage.dat").rfind("# SystemC::Coverage-3\n", 0) == 0);
    // The points of this Verilator (5.006) and RTL, every one reached by directed + 1000 random.
    const auto s = coverage_summary(r.out);
    REQUIRE(s.size() == 4);
    CHECK(s.at("line").total == e.line);
    CHECK(s.at("branch").total == e.branch);
    CHECK(s.at("toggle").total == e.toggle);
    CHECK(s.at("all").total == e.line + e.branch + e.toggle);
    for (const auto& [kind, c] : s) {
      CAPTURE(kind);
      CHECK(c.covered > 0);
      CHECK(c.covered == c.total);
    }
  }
  // The directed vectors alone leave 14 toggle points of the vector unit unset: the random ones
  // reach what the directed set does not.
  const CliResult directed = run_fracsim(
      "verify --unit vector --vectors 0 --coverage "
      "--coverage-out " +
      d + "/directed");
  INFO(directed.out);
  CHECK(directed.code == 0);
  const auto s = coverage_summary(directed.out);
  REQUIRE(s.size() == 4);
  CHECK(s.at("toggle").covered == 1344);
  CHECK(s.at("toggle").total == 1358);
  CHECK(s.at("line").covered == s.at("line").total);
  CHECK(s.at("all").covered < s.at("all").total);
  std::filesystem::remove_all(d);
}

TEST_CASE("fracsim verify --coverage: bad flags are input errors") {
  CliResult r = run_fracsim("verify --unit matrix --coverage --size 16x16");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --coverage: the matrix unit's coverage build is 4x4, not "
            "16x16"));
  r = run_fracsim("verify --unit vector --coverage --lanes 32");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --coverage: the vector unit's coverage build is 8 lanes, not "
            "32 lanes"));
  r = run_fracsim("verify --unit sort --coverage-out /tmp/never");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim verify: --coverage-out needs --coverage"));
  r = run_fracsim("verify --unit sort --coverage --coverage-out /proc/never");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim verify: --coverage-out: cannot create directory '/proc/never'"));
  CHECK_FALSE(has(r.out, "fracsim verify: sort unit"));  // refused before any vector ran
}

TEST_CASE("fracsim verify: bad flags are input errors") {
  CliResult r = run_fracsim("verify --unit topk");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim verify: --unit: expected matrix, vector or sort, got 'topk'"));
  r = run_fracsim("verify --unit sort --width 16");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --width: no width-16 sort unit in this build (built: 4, 8)"));
  r = run_fracsim("verify --unit vector --lanes 16");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --lanes: no 16-lane vector unit in this build (built: 8, 32)"));
  r = run_fracsim("verify --unit matrix --size 8x8");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --size: no 8x8 matrix unit in this build (built: 4x4, 16x16)"));
  r = run_fracsim("verify");
  CHECK(r.code == 2);
}

namespace {

// Runs `program` on `machine` in `mode` with both backends; checks that the rtl run succeeds with
// the model's cycle line and stats.json (but for what backend_neutral drops) and returns the
// two runs' output and stats.json: rtl first.
struct BackendPair {
  CliResult rtl, model;
  std::string rtl_stats, model_stats;
};

// f1 with the data-movement features off (the machine of the numbers before they existed).
const std::string kF1MovementOff =
    " --set levels.chip.keep_outputs=false --set levels.core.keep_outputs=false"
    " --set levels.core.link.multicast=false"
    " --set levels.chip.link.pipelined=false --set levels.core.link.pipelined=false"
    " --set levels.chip.resident_partial_sums=false --set levels.core.resident_partial_sums=false"
    " --set levels.chip.hold_partial_sums=false --set levels.core.hold_partial_sums=false"
    " --set levels.chip.overlap=false --set levels.core.overlap=false"
    " --set levels.chip.prefetch=false --set levels.core.prefetch=false";

BackendPair run_both(const std::string& machine, const std::string& program,
                     const std::string& mode, const std::string& sets = "") {
  const std::string dm = temp_dir(), dr = temp_dir();
  const std::string common =
      "run -m configs/" + machine + ".yaml -w " + program + " --mode " + mode + sets + " --out ";
  BackendPair p;
  p.model = run_fracsim(common + dm + " --backend model");
  p.rtl = run_fracsim(common + dr + " --backend rtl");
  INFO(p.model.out);
  INFO(p.rtl.out);
  REQUIRE(p.model.code == 0);
  REQUIRE(p.rtl.code == 0);
  CHECK(cycles_line(p.rtl.out) == cycles_line(p.model.out));
  p.model_stats = slurp(dm + "/stats.json");
  p.rtl_stats = slurp(dr + "/stats.json");
  // stats.json is the same but for the backend of the effective config.
  REQUIRE(has(p.rtl_stats, "\"backend\": \"rtl\""));
  CHECK(backend_neutral(p.rtl_stats) == backend_neutral(p.model_stats));
  std::filesystem::remove_all(dm);
  std::filesystem::remove_all(dr);
  return p;
}

}  // namespace

TEST_CASE("--backend rtl gives the model's outputs and cycles") {
  for (const std::string mode : {"functional", "timing"}) {
    for (const std::string machine : {"tiny", "f1"}) {
      CAPTURE(mode);
      CAPTURE(machine);
      const BackendPair p = run_both(machine, kWorkload, mode);
      if (mode == "functional") {
        CHECK(has(p.rtl.out,
                  "output mm8 i32[64,90]: all 5760 elements match the reference bit for bit"));
        CHECK(has(p.rtl.out,
                  "output mm16 i32[30,19]: all 570 elements match the reference bit for bit"));
        CHECK(has(p.rtl.out, "outputs match the reference"));
      }
      CHECK(leaf_total(p.rtl_stats, "rtl_matrix_instructions") == (machine == "tiny" ? 8 : 128));
      CHECK(leaf_total(p.model_stats, "rtl_matrix_instructions") == 0);
    }
  }
}

TEST_CASE(
    "--backend rtl runs integer merges on the sort unit with the model's outputs and cycles") {
  // tests/rtl/int_merge.fasm: sorts on the model, then i16 and i32 merges of two runs in place.
  for (const std::string mode : {"functional", "timing"}) {
    for (const std::string machine : {"tiny", "f1"}) {
      CAPTURE(mode);
      CAPTURE(machine);
      const BackendPair p = run_both(machine, "tests/rtl/int_merge.fasm", mode);
      CHECK(has(p.rtl.out, machine == "tiny" ? "  cycles        4005 at 1 GHz"
                                             : "  cycles        1063 at 1 GHz"));
      if (mode == "functional") {
        CHECK(has(p.rtl.out,
                  "output p i16[20,101]: all 2020 elements match the reference bit for bit"));
        CHECK(has(p.rtl.out,
                  "output q i32[30,37]: all 1110 elements match the reference bit for bit"));
      }
      CHECK(leaf_total(p.rtl_stats, "rtl_sort_instructions") == (machine == "tiny" ? 8 : 50));
      CHECK(leaf_total(p.model_stats, "rtl_sort_instructions") == 0);
    }
  }
}

TEST_CASE(
    "--backend rtl runs integer vector ops on the vector unit with the model's outputs and "
    "cycles") {
  // tests/rtl/int_vector.fasm: i8 add (saturating), relu, i16 mul (saturating), leaky_relu with
  // alpha 0.25 and frac_bits 3, reduce sum/max/min on i8/i32/i16, i32 mul (wrapping).
  for (const std::string mode : {"functional", "timing"}) {
    for (const std::string machine : {"tiny", "f1"}) {
      CAPTURE(mode);
      CAPTURE(machine);
      const BackendPair p = run_both(machine, "tests/rtl/int_vector.fasm", mode);
      CHECK(has(p.rtl.out, machine == "tiny" ? "  cycles        4802 at 1 GHz"
                                             : "  cycles        964 at 1 GHz"));
      if (mode == "functional") {
        for (const char* line :
             {"output e i8[64,100]: all 6400 elements match", "output g i8[64,100]: all 6400",
              "output f i16[40,50]: all 2000", "output h i16[40,50]: all 2000",
              "output s i32[64]: all 64", "output m i32[1]: all 1", "output n i32[40]: all 40",
              "output w i32[300]: all 300", "outputs match the reference"})
          CHECK(has(p.rtl.out, line));
      }
      CHECK(leaf_total(p.rtl_stats, "rtl_vector_instructions") == (machine == "tiny" ? 32 : 456));
      CHECK(leaf_total(p.model_stats, "rtl_vector_instructions") == 0);
    }
  }
  // On f1 the cores keep the outputs they wrote back, and later ops read them without a load;
  // with that off, the earlier number.
  CHECK(has(run_both("f1", "tests/rtl/int_vector.fasm", "timing", kF1MovementOff).rtl.out,
            "  cycles        2035 at 1 GHz"));
}

TEST_CASE("the integer MLP runs on the RTL units with the model's outputs and cycles") {
  // tests/rtl/mlp_int8.fasm: workloads/mlp.yaml's layers in integers (fc1 i8, fc2 and fc3 i16 on
  // the ReLU outputs shifted right by 16, i32 bias adds and ReLUs): every leaf instruction runs on
  // a Verilated unit, 1028 matmul pieces on the matrix unit and 132 on the vector unit on tiny.
  for (const std::string mode : {"functional", "timing"}) {
    CAPTURE(mode);
    const BackendPair p = run_both("tiny", "tests/rtl/mlp_int8.fasm", mode);
    CHECK(has(p.rtl.out, "  cycles        2283336 at 1 GHz"));
    if (mode == "functional") {
      for (const char* line :
           {"output relu1 i32[64,1024]: all 65536 elements match the reference "
            "bit for bit",
            "output relu2 i32[64,1024]: all 65536 elements match",
            "output fc3 i32[64,10]: all 640 elements match", "outputs match the reference"})
        CHECK(has(p.rtl.out, line));
    }
    CHECK(leaf_total(p.rtl_stats, "rtl_matrix_instructions") == 1028);
    CHECK(leaf_total(p.rtl_stats, "rtl_vector_instructions") == 132);
    CHECK(leaf_total(p.rtl_stats, "rtl_sort_instructions") == 0);
    CHECK(leaf_total(p.model_stats, "rtl_matrix_instructions") == 0);
    CHECK(leaf_total(p.model_stats, "rtl_vector_instructions") == 0);
  }
}

TEST_CASE("the integer MLP's layers see real data: its requantised activations are not zero") {
  // fc2 and fc3 read each ReLU output's high half (x >> 16) as i16: were those all 0, the RTL
  // matmuls of fc2 and fc3 would multiply zeros and prove little. On the reference's run, about
  // 40% of relu1's and relu2's elements have a nonzero high half (25828 and 26485 of 65536), and
  // the logits differ from the bias alone.
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p =
      isa::assemble(slurp(kRoot + "/tests/rtl/mlp_int8.fasm"), "mlp_int8.fasm", ops);
  const std::vector<uint8_t> mem = isa::run_reference(p, ops);
  auto symbol = [&](const std::string& name) -> const isa::TensorRef& {
    for (const isa::Symbol& s : p.symbols)
      if (s.name == name) return s.tensor;
    FAIL("no symbol " << name);
    throw;
  };
  auto high_halves = [&](const isa::TensorRef& t) {
    int64_t nonzero = 0;
    for (int64_t i = 0; i < t.elements(); ++i) {
      int32_t v;
      std::memcpy(&v, &mem[t.address + static_cast<uint64_t>(i) * 4], 4);
      if ((v >> 16) != 0) ++nonzero;
    }
    return nonzero;
  };
  const int64_t r1 = high_halves(symbol("relu1")), r2 = high_halves(symbol("relu2"));
  CAPTURE(r1);
  CAPTURE(r2);
  CHECK(r1 > 65536 / 4);
  CHECK(r2 > 65536 / 4);
  const isa::TensorRef &y = symbol("fc3"), &bias = symbol("fc3.bias");
  int64_t differs = 0;
  for (int64_t i = 0; i < y.elements(); ++i) {
    int32_t v, b;
    std::memcpy(&v, &mem[y.address + static_cast<uint64_t>(i) * 4], 4);
    std::memcpy(&b, &mem[bias.address + static_cast<uint64_t>(i % 10) * 4], 4);
    if (v != b) ++differs;
  }
  CHECK(differs > 600);
}

TEST_CASE("the f32 MLP under --backend rtl: the model runs it, the rest of the machine unchanged") {
  // workloads/mlp.yaml is f32, which no RTL unit implements: under --backend rtl every leaf
  // instruction falls back to the C++ unit model (no rtl_*_instructions). What this covers is the
  // swap itself: the rtl leaf backend in every leaf leaves outputs, cycles and every other stat
  // unchanged. The integer MLP above is the run that executes on the RTL.
  for (const std::string mode : {"functional", "timing"}) {
    CAPTURE(mode);
    const BackendPair p = run_both("tiny", "workloads/mlp.yaml", mode);
    CHECK(has(p.rtl.out, "  cycles        2793731 at 1 GHz"));
    if (mode == "functional") CHECK(has(p.rtl.out, "outputs match the reference"));
    for (const char* c :
         {"rtl_matrix_instructions", "rtl_vector_instructions", "rtl_sort_instructions"})
      CHECK(leaf_total(p.rtl_stats, c) == 0);
  }
}

TEST_CASE(
    "a ResNet-50 conv layer at reduced size runs on the RTL with the model's outputs and "
    "cycles") {
  // tests/rtl/resnet50_conv3x3.fasm: res2a_2b (3x3, 64 -> 64 channels, pad 1) on 14x14, i8 in,
  // i32 out. Every leaf conv2d piece streams through the Verilated MAC array as an im2col.
  for (const std::string machine : {"tiny", "f1"}) {
    for (const std::string mode : {"functional", "timing"}) {
      CAPTURE(machine);
      CAPTURE(mode);
      const BackendPair p = run_both(machine, "tests/rtl/resnet50_conv3x3.fasm", mode);
      CHECK(has(p.rtl.out, machine == "tiny" ? "  cycles        120301 at 1 GHz"
                                             : "  cycles        1812 at 1 GHz"));
      if (mode == "functional")
        CHECK(has(p.rtl.out,
                  "output res2a_2b i32[1,64,14,14]: all 12544 elements match the reference bit "
                  "for bit"));
      CHECK(leaf_total(p.rtl_stats, "rtl_matrix_instructions") == (machine == "tiny" ? 8 : 128));
      CHECK(leaf_total(p.model_stats, "rtl_matrix_instructions") == 0);
    }
  }
  // Without the data-movement features: 2055 cycles. Broadcast and kept outputs change nothing
  // (the search's pieces of this conv share no weights within one dispatch); resident partial
  // sums let the search split Ci serially at the cores (128 leaf pieces, 4 a core).
  CHECK(has(run_both("f1", "tests/rtl/resnet50_conv3x3.fasm", "timing", kF1MovementOff).rtl.out,
            "  cycles        2055 at 1 GHz"));
}

TEST_CASE("backend: rtl in a config and bad backends") {
  const std::string d = temp_dir();
  std::string tiny = slurp(kRoot + "/configs/tiny.yaml");
  const std::string from = "backend: model";
  REQUIRE(has(tiny, from));
  std::string rtl = tiny;
  rtl.replace(rtl.find(from), from.size(), "backend: rtl");
  std::ofstream(d + "/tiny-rtl.yaml") << rtl;
  const CliResult cfg = run_fracsim("run -m " + d + "/tiny-rtl.yaml -w " + kWorkload +
                                    " --mode functional --out " + d + "/cfg");
  const CliResult flag = run_fracsim("run -m configs/tiny.yaml -w " + kWorkload +
                                     " --mode functional --out " + d + "/flag --backend model");
  INFO(cfg.out);
  CHECK(cfg.code == 0);
  CHECK(cycles_line(cfg.out) == cycles_line(flag.out));
  CHECK(has(slurp(d + "/cfg/stats.json"), "\"backend\": \"rtl\""));

  CliResult r = run_fracsim("run -m configs/tiny.yaml -w " + kWorkload + " --backend verilog");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim run: --backend: expected model or rtl, got 'verilog'"));

  // An array size that was not Verilated is an input error naming the sizes built.
  std::string odd = tiny;
  const std::string mat = "matrix: {rows: 4, cols: 4}";
  REQUIRE(has(odd, mat));
  odd.replace(odd.find(mat), mat.size(), "matrix: {rows: 4, cols: 4, i8: {rows: 8}}");
  std::ofstream(d + "/odd.yaml") << odd;
  r = run_fracsim("run -m " + d + "/odd.yaml -w " + kWorkload + " --backend rtl --out " + d +
                  "/odd");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: backend rtl: no 8x4 matrix unit (for i8) in this build (built: 4x4, "
            "16x16; add the size to the CMake option FRACSIM_RTL_MATRIX_SIZES)"));
  // Likewise a lane count that was not Verilated.
  std::string lanes16 = tiny;
  const std::string vec = "vector: {lanes: 8}";
  REQUIRE(has(lanes16, vec));
  lanes16.replace(lanes16.find(vec), vec.size(), "vector: {lanes: 16}");
  std::ofstream(d + "/lanes16.yaml") << lanes16;
  r = run_fracsim("run -m " + d +
                  "/lanes16.yaml -w tests/rtl/int_vector.fasm --backend rtl --out " + d + "/l16");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: backend rtl: no 16-lane vector unit in this build (built: 8, 32; add the lane "
            "count to the CMake option FRACSIM_RTL_VECTOR_LANES)"));
  std::filesystem::remove_all(d);
}
