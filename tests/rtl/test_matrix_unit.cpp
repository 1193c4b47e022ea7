// The Verilated matrix unit through its bridge: exact cycles (the matmul `cycles` formula, plus
// one per stalled cycle), bit-exact results, the checker catching a wrong unit, and the `rtl`
// leaf backend.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

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

// tiny.yaml's leaf level and its compute unit on the C++ model and on the RTL backend.
struct TinyLeaf {
  sim::LevelSpec spec;
  std::unique_ptr<sim::LeafUnit> model, rtl;
};

TinyLeaf tiny_leaf() {
  rtl::register_backends();
  TinyLeaf t;
  t.spec =
      sim::load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/tiny.yaml").levels.back();
  sim::LevelSpec rtl_leaf = t.spec;
  rtl_leaf.backend = "rtl";
  t.model = sim::make_leaf_unit(t.spec);
  t.rtl = sim::make_leaf_unit(rtl_leaf);
  return t;
}

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
  rtl::UnitVerifyOptions o;
  o.vectors = 200;
  o.seed = 3;
  std::ostringstream good_log;
  const rtl::UnitVerifyReport good =
      rtl::verify_matrix_unit([] { return rtl::make_matrix_unit(4, 4); }, {}, o, good_log);
  CHECK(good.passed);
  CHECK(good.random == 200);
  CHECK(good.stalled_vectors > 0);
  CHECK(good.stall_cycles > 0);
  CHECK(good_log.str().empty());

  // The wrong unit drops the carry from bit 15 to bit 16 of its accumulators: -128 x 127 summed
  // five times (0xffffc080 each) needs that carry, so the second directed vector catches it, and
  // its wave is drawn by the (traced) wrong unit.
  const auto wave = std::filesystem::temp_directory_path() / "fracsim-matrix-bug.vcd";
  std::filesystem::remove(wave);
  o.wave = wave.string();
  std::ostringstream bad_log;
  const rtl::UnitVerifyReport bad =
      rtl::verify_matrix_unit(rtl::make_buggy_matrix_unit, rtl::make_buggy_matrix_unit, o, bad_log);
  CHECK_FALSE(bad.passed);
  CHECK(bad.directed == 2);
  CHECK(bad.random == 0);
  const std::string log = bad_log.str();
  CHECK(log.find("MISMATCH (results) in vector 'i8 -128 x 127, K = 5' on the 4x4 matrix unit") !=
        std::string::npos);
  CHECK(log.find("out[0,0,0]: expected -81280 (0xfffec280), seen") != std::string::npos);
  CHECK(log.find("cycles: expected 12 (formula) + 0 stalled = 12, seen 12") != std::string::npos);
  CHECK(log.find("  wave of this vector: " + wave.string()) != std::string::npos);
  CHECK(bad.wave_written);
  // A VCD: its header, the unit's ports among the variables, and one time stamp per evaluation
  // of the rerun: 3 for the reset and 2 for each of its 12 cycles, #0 to #26.
  std::ifstream vcd(wave);
  std::stringstream text;
  text << vcd.rdbuf();
  const std::string t = text.str();
  CHECK(t.rfind("$version", 0) == 0);
  CHECK(t.find("$enddefinitions $end") != std::string::npos);
  CHECK(t.find(" in_first $end") != std::string::npos);
  CHECK(t.find(" out_valid $end") != std::string::npos);
  CHECK(t.find("\n#26\n") != std::string::npos);
  CHECK(t.find("\n#27\n") == std::string::npos);
  std::filesystem::remove(wave);

  // Without a traced build the checker says so.
  std::ostringstream untraced_log;
  rtl::verify_matrix_unit(rtl::make_buggy_matrix_unit, {}, o, untraced_log);
  CHECK(untraced_log.str().find("  no wave: this unit has no traced build\n") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(wave));
}

TEST_CASE("the rtl leaf backend runs integer matmul on the RTL and the rest on the model") {
  const TinyLeaf tiny = tiny_leaf();
  auto& model = tiny.model;
  auto& unit = tiny.rtl;
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

namespace {

// A random integer conv1d/2d/3d instruction over one flat memory (in, w, out), its data, and
// the attributes drawn: stride, dilation, asymmetric pads, groups, accumulate.
struct ConvCase {
  isa::Instruction instr;
  std::vector<uint8_t> mem;
  std::string text;
};

ConvCase random_conv(const isa::OpDef& op, int axes, std::mt19937_64& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const isa::DType dt = uni(0, 1) ? isa::DType::i16 : isa::DType::i8;
  const int64_t N = uni(1, 2), G = uni(1, 2), Ci = uni(1, 5), Co = uni(1, 7);
  isa::Shape in{N, G, Ci}, w{G, Co, Ci}, out{N, G, Co};
  ConvCase c;
  c.instr.opcode = op.opcode;
  c.instr.attrs.assign(op.attributes.size(), 0);
  for (size_t i = 0; i < op.attributes.size(); ++i)
    c.instr.attrs[i] = op.attributes[i].default_value;
  auto set = [&](const std::string& name, int64_t v) {
    const int i = op.attr_index(name);
    REQUIRE(i >= 0);
    c.instr.attrs[static_cast<size_t>(i)] = v;
  };
  const char* names = &"dhw"[3 - axes];
  c.text = fmt::format("{} {} N={} G={} Ci={} Co={}", op.name, isa::dtype_name(dt), N, G, Ci, Co);
  for (int a = 0; a < axes; ++a) {
    const std::string n(1, names[a]);
    // Pads lie in [0, span): the ISA's rule for the dilated kernel's span.
    const int64_t k = uni(1, 3), stride = uni(1, 2), dil = uni(1, 2);
    const int64_t span = dil * (k - 1) + 1;
    const int64_t p0 = uni(0, span - 1), p1 = uni(0, span - 1);
    const int64_t i = uni(std::max<int64_t>(1, span - p0 - p1), 7);
    in.push_back(i);
    w.push_back(k);
    out.push_back((i + p0 + p1 - span) / stride + 1);
    set("stride_" + n, stride);
    set("dilation_" + n, dil);
    set("pad_" + n + "0", p0);
    set("pad_" + n + "1", p1);
    c.text += fmt::format(" {}: in {} k {} stride {} dilation {} pad {},{}", n, i, k, stride, dil,
                          p0, p1);
  }
  const bool accumulate = uni(0, 2) == 0;
  set("accumulate", accumulate ? 1 : 0);
  const uint32_t es = isa::dtype_size(dt);
  const uint64_t w_addr = (static_cast<uint64_t>(isa::num_elements(in)) * es + 63) / 64 * 64;
  const uint64_t o_addr =
      (w_addr + static_cast<uint64_t>(isa::num_elements(w)) * es + 63) / 64 * 64;
  c.instr.operands = {isa::make_tensor(0, dt, in), isa::make_tensor(w_addr, dt, w),
                      isa::make_tensor(o_addr, isa::DType::i32, out)};
  c.mem.resize(o_addr + static_cast<uint64_t>(isa::num_elements(out)) * 4);
  for (auto& b : c.mem) b = static_cast<uint8_t>(rng());  // full-range data, old out included
  return c;
}

}  // namespace

TEST_CASE(
    "the rtl leaf backend runs integer conv1d/2d/3d on the matrix unit, bit-exact, with "
    "the conv cycle formulas") {
  const TinyLeaf tiny = tiny_leaf();
  const sim::LevelSpec& leaf = tiny.spec;
  auto& model = tiny.model;
  auto& unit = tiny.rtl;
  const auto params = sim::unit_parameter_values(leaf);
  std::mt19937_64 rng(5);
  int on_rtl = 0;
  for (int axes = 1; axes <= 3; ++axes) {
    const isa::OpDef& op = isa::OpTable::builtin().get(fmt::format("conv{}d", axes));
    for (int i = 0; i < 60; ++i) {
      ConvCase c = random_conv(op, axes, rng);
      CAPTURE(c.text);
      std::vector<uint8_t> ref = c.mem;
      isa::MemoryView rv{ref.data(), ref.size()}, mv{c.mem.data(), c.mem.size()};
      isa::execute_reference(op, c.instr, rv);
      const uint64_t cycles = unit->run(op, c.instr, &mv);
      REQUIRE(unit->last_rtl_unit() == sim::Counter::rtl_matrix_instructions);
      CHECK(c.mem == ref);
      CHECK(cycles == sim::unit_cycles(op, c.instr, params));
      CHECK(cycles == model->run(op, c.instr, nullptr));
      CHECK(unit->run(op, c.instr, nullptr) == cycles);  // timing mode: the same cycles
      ++on_rtl;
    }
  }
  CHECK(on_rtl == 180);

  // By hand: conv2d i8, in [1,1,1,3,3] = 1..9, w [1,2,1,2,2] (ones; 1,0,0,-1), no padding:
  // out [1,1,2,2,2]. 4 pixels x 2 channels is one 4x4 block of K = 4 taps: 4 + 4 + 4 - 1 = 11.
  const isa::OpDef& conv2d = isa::OpTable::builtin().get("conv2d");
  isa::Instruction in;
  in.opcode = conv2d.opcode;
  for (const auto& a : conv2d.attributes) in.attrs.push_back(a.default_value);
  in.operands = {isa::make_tensor(0, isa::DType::i8, {1, 1, 1, 3, 3}),
                 isa::make_tensor(16, isa::DType::i8, {1, 2, 1, 2, 2}),
                 isa::make_tensor(32, isa::DType::i32, {1, 1, 2, 2, 2})};
  std::vector<uint8_t> mem(64);
  put(mem, 0, std::vector<int8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  put(mem, 16, std::vector<int8_t>{1, 1, 1, 1, 1, 0, 0, -1});
  isa::MemoryView mv{mem.data(), mem.size()};
  CHECK(unit->run(conv2d, in, &mv) == 11);
  CHECK(get<int32_t>(mem, 32, 8) == std::vector<int32_t>{12, 16, 24, 28, -4, -4, -4, -4});
  // f32 conv stays on the model.
  for (auto& t : in.operands) t.dtype = isa::DType::f32;
  CHECK(unit->run(conv2d, in, nullptr) == model->run(conv2d, in, nullptr));
  CHECK_FALSE(unit->last_rtl_unit().has_value());
}
