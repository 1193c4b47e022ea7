// `fracsim verify` and `fracsim run --backend rtl` as a user runs them.
#include <doctest/doctest.h>

#include "tests/common/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

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

std::string cycles_line(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("  cycles +[0-9]+ [^\n]*")));
  return m.str();
}

}  // namespace

TEST_CASE("fracsim verify --unit matrix --vectors 1000 passes on every built size") {
  const CliResult r = run_fracsim("verify --unit matrix --vectors 1000");
  INFO(r.out);
  CHECK(r.code == 0);
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

TEST_CASE("--backend rtl gives the model's outputs and cycles") {
  for (const std::string mode : {"functional", "timing"}) {
    for (const std::string machine : {"tiny", "f1"}) {
      CAPTURE(mode);
      CAPTURE(machine);
      const std::string dm = temp_dir(), dr = temp_dir();
      const std::string common =
          "run -m configs/" + machine + ".yaml -w " + kWorkload + " --mode " + mode + " --out ";
      const CliResult m = run_fracsim(common + dm + " --backend model");
      const CliResult r = run_fracsim(common + dr + " --backend rtl");
      INFO(m.out);
      INFO(r.out);
      REQUIRE(m.code == 0);
      REQUIRE(r.code == 0);
      CHECK(cycles_line(r.out) == cycles_line(m.out));
      if (mode == "functional") {
        CHECK(
            has(r.out, "output mm8 i32[64,90]: all 5760 elements match the reference bit for bit"));
        CHECK(
            has(r.out, "output mm16 i32[30,19]: all 570 elements match the reference bit for bit"));
        CHECK(has(r.out, "outputs match the reference"));
      }
      // stats.json is the same but for the backend of the effective config.
      std::string sm = slurp(dm + "/stats.json"), sr = slurp(dr + "/stats.json");
      REQUIRE(has(sr, "\"backend\": \"rtl\""));
      sr = std::regex_replace(sr, std::regex("\"backend\": \"rtl\""), "\"backend\": \"model\"");
      sr = std::regex_replace(sr, std::regex("\"seconds\": [0-9.e+-]+"), "");
      sm = std::regex_replace(sm, std::regex("\"seconds\": [0-9.e+-]+"), "");
      CHECK(sr == sm);
      std::filesystem::remove_all(dm);
      std::filesystem::remove_all(dr);
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
      const std::string dm = temp_dir(), dr = temp_dir();
      const std::string common = "run -m configs/" + machine +
                                 ".yaml -w tests/rtl/int_merge.fasm --mode " + mode + " --out ";
      const CliResult m = run_fracsim(common + dm + " --backend model");
      const CliResult r = run_fracsim(common + dr + " --backend rtl");
      INFO(m.out);
      INFO(r.out);
      REQUIRE(m.code == 0);
      REQUIRE(r.code == 0);
      CHECK(cycles_line(r.out) == cycles_line(m.out));
      CHECK(has(r.out, machine == "tiny" ? "  cycles        4005 at 1 GHz"
                                         : "  cycles        1671 at 1 GHz"));
      if (mode == "functional") {
        CHECK(
            has(r.out, "output p i16[20,101]: all 2020 elements match the reference bit for bit"));
        CHECK(has(r.out, "output q i32[30,37]: all 1110 elements match the reference bit for bit"));
      }
      std::string sm = slurp(dm + "/stats.json"), sr = slurp(dr + "/stats.json");
      sr = std::regex_replace(sr, std::regex("\"backend\": \"rtl\""), "\"backend\": \"model\"");
      sr = std::regex_replace(sr, std::regex("\"seconds\": [0-9.e+-]+"), "");
      sm = std::regex_replace(sm, std::regex("\"seconds\": [0-9.e+-]+"), "");
      CHECK(sr == sm);
      std::filesystem::remove_all(dm);
      std::filesystem::remove_all(dr);
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
      const std::string dm = temp_dir(), dr = temp_dir();
      const std::string common = "run -m configs/" + machine +
                                 ".yaml -w tests/rtl/int_vector.fasm --mode " + mode + " --out ";
      const CliResult m = run_fracsim(common + dm + " --backend model");
      const CliResult r = run_fracsim(common + dr + " --backend rtl");
      INFO(m.out);
      INFO(r.out);
      REQUIRE(m.code == 0);
      REQUIRE(r.code == 0);
      CHECK(cycles_line(r.out) == cycles_line(m.out));
      CHECK(has(r.out, machine == "tiny" ? "  cycles        4802 at 1 GHz"
                                         : "  cycles        2029 at 1 GHz"));
      if (mode == "functional") {
        for (const char* line :
             {"output e i8[64,100]: all 6400 elements match", "output g i8[64,100]: all 6400",
              "output f i16[40,50]: all 2000", "output h i16[40,50]: all 2000",
              "output s i32[64]: all 64", "output m i32[1]: all 1", "output n i32[40]: all 40",
              "output w i32[300]: all 300", "outputs match the reference"})
          CHECK(has(r.out, line));
      }
      std::string sm = slurp(dm + "/stats.json"), sr = slurp(dr + "/stats.json");
      REQUIRE(has(sr, "\"backend\": \"rtl\""));
      sr = std::regex_replace(sr, std::regex("\"backend\": \"rtl\""), "\"backend\": \"model\"");
      sr = std::regex_replace(sr, std::regex("\"seconds\": [0-9.e+-]+"), "");
      sm = std::regex_replace(sm, std::regex("\"seconds\": [0-9.e+-]+"), "");
      CHECK(sr == sm);
      std::filesystem::remove_all(dm);
      std::filesystem::remove_all(dr);
    }
  }
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
