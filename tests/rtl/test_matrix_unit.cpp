// The Verilated matrix unit through its bridge: exact cycles (the matmul `cycles` formula, plus
// one per stalled cycle), bit-exact results, the checker catching a wrong unit, and the `rtl`
// leaf backend.
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "isa/op_def.h"
#include "isa/reference.h"
#include "isa/tensor.h"
#include "rtl/matrix_bridge.h"
#include "rtl/matrix_unit_bug.h"
#include "rtl/matrix_verify.h"
#include "rtl/rtl_backend.h"
#include "sim/leaf_unit.h"
#include "sim/machine_spec.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim;
using fracsim::testing::get;
using fracsim::testing::put;

namespace {

rtl::MatmulResult run(int rows, int cols, rtl::MatmulJob job, const std::vector<int16_t>& a,
                      const std::vector<int16_t>& b) {
  rtl::MatrixBridge bridge(rtl::make_matrix_unit(rows, cols));
  job.a = a.data();
  job.b = b.data();
  return bridge.run(job);
}

rtl::MatmulJob job(int64_t B, int64_t M, int64_t K, int64_t N, bool i16 = false) {
  rtl::MatmulJob j;
  j.B = B;
  j.M = M;
  j.K = K;
  j.N = N;
  j.i16 = i16;
  return j;
}

}  // namespace

TEST_CASE("the shipped configs' array sizes are built") {
  CHECK(rtl::built_matrix_sizes() == std::vector<std::string>{"4x4", "16x16"});
  CHECK(rtl::make_matrix_unit(4, 4) != nullptr);
  CHECK(rtl::make_matrix_unit(16, 16) != nullptr);
  CHECK(rtl::make_matrix_unit(8, 8) == nullptr);
}

TEST_CASE("a 2x2 matmul on the 4x4 unit by hand") {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]; one partial block of K = 2 beats:
  // 1 * 1 * 1 * 2 + 4 + 4 - 1 = 9 cycles.
  const rtl::MatmulResult r = run(4, 4, job(1, 2, 2, 2), {1, 2, 3, 4}, {5, 6, 7, 8});
  CHECK(r.out == std::vector<int32_t>{19, 22, 43, 50});
  CHECK(r.cycles == 9);
  CHECK(r.stall_cycles == 0);
  CHECK(r.blocks == 1);
}

TEST_CASE("cycles equal the formula exactly with partial blocks") {
  // 4x4: B=1, M=5, N=3 -> 2 x 1 blocks of K = 7 beats: 14 + 4 + 4 - 1 = 21.
  std::vector<int16_t> a(5 * 7, 1), b(7 * 3, 1);
  rtl::MatmulResult r = run(4, 4, job(1, 5, 7, 3), a, b);
  CHECK(r.cycles == 21);
  CHECK(r.out == std::vector<int32_t>(15, 7));
  // 16x16: B=2, M=17, N=16 -> 2 x 2 x 1 blocks of K = 3 beats: 12 + 16 + 16 - 1 = 43.
  std::vector<int16_t> a2(2 * 17 * 3, -2), b2(2 * 3 * 16, 3);
  r = run(16, 16, job(2, 17, 3, 16), a2, b2);
  CHECK(r.cycles == 43);
  CHECK(r.out == std::vector<int32_t>(2 * 17 * 16, -18));
  // An empty job takes no time.
  r = run(4, 4, job(1, 4, 0, 4), {}, {});
  CHECK(r.cycles == 0);
  CHECK(r.out == std::vector<int32_t>(16, 0));
}

TEST_CASE("int16 products accumulate in int32 with wrap-around") {
  // (-32768)^2 = 2^30; four of them are 2^32 = 0 mod 2^32, three are -2^30 as int32.
  std::vector<int16_t> a(4, -32768), b(4, -32768);
  CHECK(run(4, 4, job(1, 1, 4, 1, true), a, b).out == std::vector<int32_t>{0});
  a.resize(3);
  b.resize(3);
  CHECK(run(4, 4, job(1, 1, 3, 1, true), a, b).out == std::vector<int32_t>{-1073741824});
  // int8 lanes are sign-extended from bit 7.
  CHECK(run(4, 4, job(1, 1, 1, 1), {-128}, {127}).out == std::vector<int32_t>{-16256});
}

TEST_CASE("a stalled result stream loses nothing and adds exactly its stalled cycles") {
  // 4x4, M = 8, N = 4, K = 1: two blocks, offered in cycles 7 and 8 without back-pressure
  // (9 cycles). out_ready only in even cycles: block 0 waits in cycle 7 and is taken in cycle 8;
  // block 1, held meanwhile, is offered in 9, waits, and is taken in 10: 11 cycles, 2 stalled.
  std::vector<int16_t> a(8), b(4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int16_t>(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int16_t>(10 * (i + 1));
  rtl::MatmulJob j = job(1, 8, 1, 4);
  j.ready_pattern = {1, 0};
  const rtl::MatmulResult r = run(4, 4, j, a, b);
  CHECK(r.cycles == 11);
  CHECK(r.stall_cycles == 2);
  for (int m = 0; m < 8; ++m)
    for (int n = 0; n < 4; ++n) CHECK(r.out[m * 4 + n] == (m + 1) * 10 * (n + 1));
  // Never ready in the first 20 cycles of every 21: each block waits for cycle 20 mod 21.
  j.ready_pattern.assign(21, 0);
  j.ready_pattern.back() = 1;
  const rtl::MatmulResult held = run(4, 4, j, a, b);
  CHECK(held.out == r.out);
  CHECK(held.cycles == 9 + held.stall_cycles);
  CHECK(held.cycles == 42);  // block 0 taken in cycle 20, block 1 (next cycle held) in 41
}

TEST_CASE("the bridge resets the unit between jobs") {
  rtl::MatrixBridge bridge(rtl::make_matrix_unit(4, 4));
  std::vector<int16_t> a(4 * 3, 2), b(3 * 4, 5);
  rtl::MatmulJob j = job(1, 4, 3, 4);
  j.a = a.data();
  j.b = b.data();
  j.ready_pattern = {0, 0, 1};
  const rtl::MatmulResult first = bridge.run(j);
  j.ready_pattern.clear();
  const rtl::MatmulResult second = bridge.run(j);
  CHECK(first.out == std::vector<int32_t>(16, 30));
  CHECK(second.out == first.out);
  CHECK(second.cycles == 3 + 7);
}

TEST_CASE("the checker passes the unit and reports a wrong one") {
  rtl::MatrixVerifyOptions o;
  o.vectors = 200;
  o.seed = 3;
  std::ostringstream good_log;
  const rtl::MatrixVerifyReport good =
      rtl::verify_matrix_unit([] { return rtl::make_matrix_unit(4, 4); }, o, good_log);
  CHECK(good.passed);
  CHECK(good.random == 200);
  CHECK(good.stalled_vectors > 0);
  CHECK(good.stall_cycles > 0);
  CHECK(good_log.str().empty());

  // The wrong unit drops the carry from bit 15 to bit 16 of its accumulators: -128 x 127 summed
  // five times (0xffffc080 each) needs that carry, so the second directed vector catches it.
  std::ostringstream bad_log;
  const rtl::MatrixVerifyReport bad =
      rtl::verify_matrix_unit(rtl::make_buggy_matrix_unit, o, bad_log);
  CHECK_FALSE(bad.passed);
  CHECK(bad.directed == 2);
  CHECK(bad.random == 0);
  const std::string log = bad_log.str();
  CHECK(log.find("MISMATCH (results) in vector 'i8 -128 x 127, K = 5' on the 4x4 matrix unit") !=
        std::string::npos);
  CHECK(log.find("out[0,0,0]: expected -81280 (0xfffec280), seen") != std::string::npos);
  CHECK(log.find("cycles: expected 12 (formula) + 0 stalled = 12, seen 12") != std::string::npos);
}

TEST_CASE("the rtl leaf backend runs integer matmul on the RTL and the rest on the model") {
  rtl::register_backends();
  sim::MachineSpec spec =
      sim::load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/tiny.yaml");
  sim::LevelSpec leaf = spec.levels.back();
  sim::LevelSpec rtl_leaf = leaf;
  rtl_leaf.backend = "rtl";
  auto model = sim::make_leaf_unit(leaf);
  auto unit = sim::make_leaf_unit(rtl_leaf);
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::OpDef& matmul = ops.get("matmul");

  // i8 a[1,6,5] x b[1,5,7] accumulated onto an i32 out: 2 x 2 blocks of 5 beats on 4x4.
  isa::Instruction in;
  in.opcode = matmul.opcode;
  in.operands = {isa::make_tensor(0, isa::DType::i8, {1, 6, 5}),
                 isa::make_tensor(64, isa::DType::i8, {1, 5, 7}),
                 isa::make_tensor(128, isa::DType::i32, {1, 6, 7})};
  in.attrs = {1};
  std::vector<uint8_t> mem(128 + 6 * 7 * 4);
  std::vector<int8_t> a(30), b(35);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int8_t>(i * 37 - 100);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(i * 53 + 7);
  put(mem, 0, a);
  put(mem, 64, b);
  std::vector<int32_t> old(42);
  for (size_t i = 0; i < old.size(); ++i) old[i] = static_cast<int32_t>(0x7ffffff0 + i);
  put(mem, 128, old);
  std::vector<uint8_t> ref = mem;
  isa::MemoryView rv{ref.data(), ref.size()}, mv{mem.data(), mem.size()};
  CHECK(model->run(matmul, in, &rv) == 2 * 2 * 5 + 7);
  CHECK(unit->run(matmul, in, &mv) == 2 * 2 * 5 + 7);
  CHECK(get<int32_t>(mem, 128, 42) == get<int32_t>(ref, 128, 42));
  CHECK(unit->run(matmul, in, nullptr) == 2 * 2 * 5 + 7);  // timing mode: no data

  // f32 matmul and eltwise: the model's cycles.
  isa::Instruction f = in;
  for (auto& t : f.operands) t.dtype = isa::DType::f32;
  CHECK(unit->run(matmul, f, nullptr) == model->run(matmul, f, nullptr));
}
