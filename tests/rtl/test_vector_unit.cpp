// The Verilated vector unit through its bridge: exact cycles (cdiv(elements, lanes), plus one per
// stalled cycle), bit-exact results by hand, the checker passing and catching a wrong unit (with
// a wave of the failing vector).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rtl/vector_bridge.h"
#include "rtl/vector_unit_bug.h"
#include "rtl/vector_verify.h"

using namespace fracsim;

namespace {

rtl::VectorResult run(int lanes, rtl::VectorJob job) {
  rtl::VectorBridge bridge(rtl::make_vector_unit(lanes));
  return bridge.run(job);
}

rtl::VectorJob job(rtl::VectorOp op, rtl::VectorDType dt, std::vector<int32_t> a,
                   std::vector<int32_t> b = {}) {
  rtl::VectorJob j;
  j.op = op;
  j.dtype = dt;
  j.a = std::move(a);
  j.b = std::move(b);
  return j;
}

}  // namespace

TEST_CASE("the shipped configs' lane counts are built") {
  CHECK(rtl::built_vector_lanes() == std::vector<int>{8, 32});
  CHECK(rtl::make_vector_unit(8) != nullptr);
  CHECK(rtl::make_vector_unit(32) != nullptr);
  CHECK(rtl::make_vector_unit(16) == nullptr);
  CHECK(rtl::make_traced_vector_unit(8) != nullptr);
}

TEST_CASE("i8 add saturates, i32 add wraps, cdiv(elements, lanes) cycles") {
  using rtl::VectorDType;
  using rtl::VectorOp;
  rtl::VectorResult r =
      run(8, job(VectorOp::add, VectorDType::i8, {127, -128, 100, -100, 3, 0, 1, -1, 5},
                 {1, -1, 100, -100, 4, 0, 126, -127, -5}));
  CHECK(r.out == std::vector<int32_t>{127, -128, 127, -128, 7, 0, 127, -128, 0});
  CHECK(r.cycles == 2);  // 9 elements on 8 lanes
  CHECK(r.beats == 2);
  r = run(8, job(VectorOp::add, VectorDType::i32, {INT32_MAX, INT32_MIN}, {1, -1}));
  CHECK(r.out == std::vector<int32_t>{INT32_MIN, INT32_MAX});
  CHECK(r.cycles == 1);
  r = run(32, job(VectorOp::mul, VectorDType::i16, {-32768, 300, -7}, {-32768, -300, 9}));
  CHECK(r.out == std::vector<int32_t>{32767, -32768, -63});
  r = run(8, job(VectorOp::min, VectorDType::i32, {}, {}));
  CHECK(r.out.empty());
  CHECK(r.cycles == 0);
}

TEST_CASE("leaky_relu in Q16 rounds half to even, relu") {
  rtl::VectorJob j = job(rtl::VectorOp::leaky_relu, rtl::VectorDType::i8, {-1, -3, -5, -128, 7, 0});
  j.alpha_q16 = 32768;  // 0.5
  CHECK(run(8, j).out == std::vector<int32_t>{0, -2, -2, -64, 7, 0});
  CHECK(run(8, job(rtl::VectorOp::relu, rtl::VectorDType::i32, {INT32_MIN, -1, 0, 5})).out ==
        std::vector<int32_t>{0, 0, 0, 5});
}

TEST_CASE("segmented reductions: outputs share beats, back-pressure adds one cycle per stall") {
  // 6 outputs of 3 terms: 18 elements, cdiv(18, 8) = 3 beats.
  rtl::VectorJob j = job(rtl::VectorOp::reduce_sum, rtl::VectorDType::i8, {});
  for (int i = 0; i < 18; ++i) j.a.push_back(i);
  j.group = 3;
  rtl::VectorResult r = run(8, j);
  CHECK(r.out == std::vector<int32_t>{3, 12, 21, 30, 39, 48});
  CHECK(r.cycles == 3);
  j.op = rtl::VectorOp::reduce_max;
  j.a = {5, -9, 2, INT32_MIN, INT32_MIN, INT32_MIN, 7, 7, 8, -1, -2, -3, 0, 0, 0, 1, 1, 1};
  j.ready_pattern = {0, 0, 1};  // two stalled cycles before each taken beat
  r = run(8, j);
  CHECK(r.out == std::vector<int32_t>{5, INT32_MIN, 8, -1, 0, 1});
  CHECK(r.stall_cycles == 6);
  CHECK(r.cycles == 3 + 6);
  j.op = rtl::VectorOp::reduce_sum;
  j.a = {INT32_MAX, 1, 0};
  j.group = 3;
  j.ready_pattern.clear();
  CHECK(run(8, j).out == std::vector<int32_t>{INT32_MIN});
}

TEST_CASE("verify passes 1,000 random vectors on every lane count") {
  for (int lanes : rtl::built_vector_lanes()) {
    CAPTURE(lanes);
    std::ostringstream out;
    rtl::UnitVerifyOptions o;
    o.vectors = 1000;
    o.seed = 7;
    const rtl::UnitVerifyReport r =
        rtl::verify_vector_unit([lanes] { return rtl::make_vector_unit(lanes); }, {}, o, out);
    INFO(out.str());
    CHECK(r.passed);
    CHECK(r.directed == 27);
    CHECK(r.random == 1000);
    CHECK(r.stalled_vectors > 300);
    CHECK(r.stall_cycles > 0);
  }
}

TEST_CASE("the checker catches a wrong vector unit and draws the failing vector") {
  const auto wave = std::filesystem::temp_directory_path() / "fracsim-vector-bug.vcd";
  std::filesystem::remove(wave);
  std::ostringstream out;
  rtl::UnitVerifyOptions o;
  o.vectors = 1000;
  o.wave = wave.string();
  const rtl::UnitVerifyReport r =
      rtl::verify_vector_unit(rtl::make_buggy_vector_unit, rtl::make_buggy_vector_unit, o, out);
  const std::string s = out.str();
  INFO(s);
  CHECK_FALSE(r.passed);
  // The first directed vector saturates -128 + -1 in i8: the wrong unit gives -127.
  CHECK(r.directed == 1);
  CHECK(s.find("MISMATCH (results) in vector 'i8 add/sub saturation' on the 8-lane vector unit") !=
        std::string::npos);
  CHECK(s.find("out[1]: expected -128, seen -127") != std::string::npos);
  CHECK(s.find("cycles: expected 2 (formula) + 0 stalled = 2, seen 2") != std::string::npos);
  CHECK(r.wave_written);
  std::ifstream vcd(wave);
  std::stringstream text;
  text << vcd.rdbuf();
  CHECK(text.str().find("$enddefinitions") != std::string::npos);
  CHECK(text.str().find("out_data") != std::string::npos);
  std::filesystem::remove(wave);
}
