// `fracsim verify` and `fracsim run --backend rtl` as a user runs them.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;
const std::string kBin = FRACSIM_BINARY;
const std::string kWorkload = "tests/rtl/int_matmul.yaml";

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result fracsim(const std::string& args) {
  Result r;
  std::string cmd = "cd '" + kRoot + "' && '" + kBin + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string temp_dir() {
  static int counter = 0;
  auto d = std::filesystem::temp_directory_path() /
           ("fracsim-rtl-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(d);
  return d.string();
}

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
  const Result r = fracsim("verify --unit matrix --vectors 1000");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "fracsim verify: matrix unit, seed 1, 1000 random vectors per size"));
  CHECK(std::regex_search(r.out, std::regex("  4x4: 1019 vectors \\(19 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(std::regex_search(r.out, std::regex("16x16: 1019 vectors \\(19 directed, 1000 random, "
                                            "[0-9]+ with back-pressure\\), 0 mismatches")));
  CHECK(has(r.out, "all results bit-exact; all cycles equal the model's formula plus stalls"));
}

TEST_CASE("fracsim verify: bad flags are input errors") {
  Result r = fracsim("verify --unit sort");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim verify: --unit: expected matrix, got 'sort'"));
  r = fracsim("verify --unit matrix --size 8x8");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: fracsim verify: --size: no 8x8 matrix unit in this build (built: 4x4, 16x16)"));
  r = fracsim("verify");
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
      const Result m = fracsim(common + dm + " --backend model");
      const Result r = fracsim(common + dr + " --backend rtl");
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

TEST_CASE("backend: rtl in a config and bad backends") {
  const std::string d = temp_dir();
  std::string tiny = slurp(kRoot + "/configs/tiny.yaml");
  const std::string from = "backend: model";
  REQUIRE(has(tiny, from));
  std::string rtl = tiny;
  rtl.replace(rtl.find(from), from.size(), "backend: rtl");
  std::ofstream(d + "/tiny-rtl.yaml") << rtl;
  const Result cfg = fracsim("run -m " + d + "/tiny-rtl.yaml -w " + kWorkload +
                             " --mode functional --out " + d + "/cfg");
  const Result flag = fracsim("run -m configs/tiny.yaml -w " + kWorkload +
                              " --mode functional --out " + d + "/flag --backend model");
  INFO(cfg.out);
  CHECK(cfg.code == 0);
  CHECK(cycles_line(cfg.out) == cycles_line(flag.out));
  CHECK(has(slurp(d + "/cfg/stats.json"), "\"backend\": \"rtl\""));

  Result r = fracsim("run -m configs/tiny.yaml -w " + kWorkload + " --backend verilog");
  CHECK(r.code == 2);
  CHECK(has(r.out, "error: fracsim run: --backend: expected model or rtl, got 'verilog'"));

  // An array size that was not Verilated is an input error naming the sizes built.
  std::string odd = tiny;
  const std::string mat = "matrix: {rows: 4, cols: 4}";
  REQUIRE(has(odd, mat));
  odd.replace(odd.find(mat), mat.size(), "matrix: {rows: 4, cols: 4, i8: {rows: 8}}");
  std::ofstream(d + "/odd.yaml") << odd;
  r = fracsim("run -m " + d + "/odd.yaml -w " + kWorkload + " --backend rtl --out " + d + "/odd");
  CHECK(r.code == 2);
  CHECK(has(r.out,
            "error: backend rtl: no 8x4 matrix unit (for i8) in this build (built: 4x4, "
            "16x16; add the size to the CMake option FRACSIM_RTL_MATRIX_SIZES)"));
  std::filesystem::remove_all(d);
}
