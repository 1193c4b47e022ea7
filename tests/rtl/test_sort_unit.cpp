// The Verilated sort (merge) unit through its bridge: exact cycles (M * cdiv(N, width), plus one
// per stalled cycle), bit-exact merges by hand, the checker passing and catching a wrong unit
// (with a wave of the failing vector).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rtl/sort_bridge.h"
#include "rtl/sort_unit_bug.h"
#include "rtl/sort_verify.h"

using namespace fracsim;

namespace {

rtl::MergeResult run(int width, rtl::MergeJob job) {
  rtl::SortBridge bridge(rtl::make_sort_unit(width));
  return bridge.run(job);
}

rtl::MergeJob job(int64_t M, int64_t N, std::vector<int32_t> rows, bool descending = false) {
  rtl::MergeJob j;
  j.M = M;
  j.N = N;
  j.rows = std::move(rows);
  j.descending = descending;
  return j;
}

}  // namespace

TEST_CASE("the shipped configs' sort widths are built") {
  CHECK(rtl::built_sort_widths() == std::vector<int>{4, 8});
  CHECK(rtl::make_sort_unit(4) != nullptr);
  CHECK(rtl::make_sort_unit(8) != nullptr);
  CHECK(rtl::make_sort_unit(16) == nullptr);
  CHECK(rtl::make_traced_sort_unit(4) != nullptr);
}

TEST_CASE("merges of two runs by hand: signed order, descending, rows, cycles") {
  // Runs [-128, -1, 5, 9] and [-2, 0, 7]: 7 elements on width 4 = 2 beats.
  rtl::MergeResult r = run(4, job(1, 7, {-128, -1, 5, 9, -2, 0, 7}));
  CHECK(r.out == std::vector<int32_t>{-128, -2, -1, 0, 5, 7, 9});
  CHECK(r.cycles == 2);
  // Two rows, descending: 2 * cdiv(5, 4) = 4 cycles; on width 8, 2.
  const rtl::MergeJob d =
      job(2, 5, {9, 3, 1, 8, 2, INT32_MAX, 0, INT32_MIN, 5, -5}, /*descending=*/true);
  r = run(4, d);
  CHECK(r.out == std::vector<int32_t>{9, 8, 3, 2, 1, INT32_MAX, 5, 0, -5, INT32_MIN});
  CHECK(r.cycles == 4);
  CHECK(run(8, d).cycles == 2);
  // Back-pressure: ready one cycle in three adds two stalled cycles before each beat.
  rtl::MergeJob s = d;
  s.ready_pattern = {0, 0, 1};
  r = run(4, s);
  CHECK(r.stall_cycles == 8);
  CHECK(r.cycles == 4 + 8);
  CHECK(run(4, job(3, 0, {})).cycles == 0);
}

TEST_CASE("verify passes 1,000 random merges on every width") {
  for (int width : rtl::built_sort_widths()) {
    CAPTURE(width);
    std::ostringstream out;
    rtl::UnitVerifyOptions o;
    o.vectors = 1000;
    o.seed = 5;
    const rtl::UnitVerifyReport r =
        rtl::verify_sort_unit([width] { return rtl::make_sort_unit(width); }, {}, o, out);
    INFO(out.str());
    CHECK(r.passed);
    CHECK(r.directed == 14);
    CHECK(r.random == 1000);
    CHECK(r.stalled_vectors > 300);
  }
}

TEST_CASE("the checker catches a wrong sort unit and draws the failing vector") {
  const auto wave = std::filesystem::temp_directory_path() / "fracsim-sort-bug.vcd";
  std::filesystem::remove(wave);
  std::ostringstream out;
  rtl::UnitVerifyOptions o;
  o.wave = wave.string();
  const rtl::UnitVerifyReport r =
      rtl::verify_sort_unit(rtl::make_buggy_sort_unit, rtl::make_buggy_sort_unit, o, out);
  const std::string s = out.str();
  INFO(s);
  CHECK_FALSE(r.passed);
  CHECK(r.directed == 1);  // the first directed vector mixes signs
  CHECK(s.find("MISMATCH (results) in vector 'i8 extremes, signed order' on the width-4 sort "
               "unit") != std::string::npos);
  CHECK(s.find("expected out (reference):\n    -128 -127 -1 0 126 127 ") != std::string::npos);
  CHECK(r.wave_written);
  std::ifstream vcd(wave);
  std::stringstream text;
  text << vcd.rdbuf();
  CHECK(text.str().find("out_take_a") != std::string::npos);
  std::filesystem::remove(wave);
}
