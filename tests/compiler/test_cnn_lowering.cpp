// Lowering of the CNN layers, views and concat: exact instruction lists for small cases, worked
// out by hand, and the benchmark workloads' instruction counts and footprints.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/common/compile_helpers.h"
#include "tests/common/instruction_helpers.h"

using fracsim::compiler::Compilation;
using fracsim::compiler::compile_with_plan;
using fracsim::compiler::LayerKind;
using fracsim::compiler::load_workload;
using fracsim::compiler::parse_workload;
using fracsim::compiler::Workload;
using fracsim::isa::DataSegment;
using fracsim::isa::DType;
using fracsim::isa::Instruction;
using fracsim::isa::OpTable;
using fracsim::isa::Program;
using fracsim::isa::real_to_attr;
using fracsim::isa::Shape;
using fracsim::isa::Symbol;
using fracsim::isa::SymbolRole;
using fracsim::isa::TensorRef;

namespace {

using fracsim::testing::instruction;
using fracsim::testing::unfused;

const OpTable& ops() { return OpTable::builtin(); }

TensorRef f32(uint64_t address, Shape shape, Shape strides) {
  return TensorRef{address, DType::f32, std::move(shape), std::move(strides)};
}

void check_program(const Program& p, const std::vector<Instruction>& expect) {
  REQUIRE(p.instructions.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("instruction ", i);
    CHECK(p.instructions[i] == expect[i]);
  }
}

const int64_t kMax = 4;  // eltwise fn max: the copy

}  // namespace

TEST_CASE("conv2d with groups, stride, asymmetric kernel and bias: the exact program") {
  Compilation c = compile_with_plan(
      parse_workload("workload: conv\n"
                     "inputs:\n"
                     "  x: {shape: [1, 4, 5, 5], dtype: f32}\n"
                     "layers:\n"
                     "  - {name: c, type: conv2d, input: x, filters: 6, kernel: [3, 1],\n"
                     "     stride: [2, 1], padding: [1, 0], groups: 2}\n",
                     "conv.yaml", unfused()),
      ops());
  const Program& p = c.program;
  // Ho = (5 + 1 + 1 - 3) / 2 + 1 = 3, Wo = 5. All four tensors live throughout: x 400 B -> 0,
  // c.weight [6,2,3,1] 144 B -> 448, c.bias 24 B -> 640, c [1,6,3,5] 360 B -> 704.
  CHECK(p.footprint == 1088);
  const uint64_t x = 0, w = 448, b = 640, y = 704;
  // [N, G*Ci, H, W] seen as [N, G, Ci, H, W]; the weight [G*Co, Ci, Kh, Kw] as [G, Co, ...].
  // conv2d attrs: stride_h, stride_w, dilation_h, dilation_w, pad_h0, pad_h1, pad_w0, pad_w1,
  // accumulate.
  check_program(p, {instruction("conv2d",
                                {f32(x, {1, 2, 2, 5, 5}, {100, 50, 25, 5, 1}),
                                 f32(w, {2, 3, 2, 3, 1}, {18, 6, 3, 1, 1}),
                                 f32(y, {1, 2, 3, 3, 5}, {90, 45, 15, 5, 1})},
                                {2, 1, 1, 1, 1, 1, 0, 0, 0}),
                    instruction("eltwise",
                                {f32(y, {1, 1, 1, 1, 6, 15}, {0, 0, 0, 90, 15, 1}),
                                 f32(b, {1, 1, 1, 1, 6, 15}, {0, 0, 0, 0, 1, 0}),
                                 f32(y, {1, 1, 1, 1, 6, 15}, {0, 0, 0, 90, 15, 1})},
                                {0})});
  const double r = 1.0 / std::sqrt(6.0);  // fan-in Ci * Kh * Kw = 2 * 3 * 1
  REQUIRE(p.data.size() == 3);
  CHECK(p.data[1].address == w);
  CHECK(p.data[1].count == 36);
  CHECK(p.data[1].lo == -r);
  CHECK(p.data[2].hi == r);
  CHECK(p.symbols[1] == Symbol{"c.weight", SymbolRole::weight, f32(w, {6, 2, 3, 1}, {6, 3, 1, 1})});
}

TEST_CASE("batchnorm, pooling, softmax, layernorm and activations: operand views and attributes") {
  Compilation c = compile_with_plan(
      parse_workload("workload: cnn\n"
                     "inputs:\n"
                     "  x: {shape: [1, 2, 2, 2], dtype: f32}\n"
                     "layers:\n"
                     "  - {name: bn, type: batchnorm, input: x}\n"
                     "  - {name: mp, type: maxpool, input: bn, kernel: 2, stride: 1, padding: 1}\n"
                     "  - {name: ap, type: avgpool, input: mp, kernel: 3, padding: 1,\n"
                     "     count_include_pad: true}\n"
                     "  - {name: g, type: global_avgpool, input: mp}\n"
                     "  - {name: s, type: softmax, input: mp}\n"
                     "  - {name: ln, type: layernorm, input: s, epsilon: 0.001}\n"
                     "  - {name: ge, type: gelu, input: ln}\n"
                     "  - {name: sg, type: sigmoid, input: ge}\n"
                     "  - {name: th, type: tanh, input: sg}\n"
                     "outputs: [ap, g, th]\n",
                     "cnn.yaml", unfused()),
      ops());
  const Program& p = c.program;
  auto at = [&](const std::string& name) { return c.plan.at(name).address; };
  // pool2d attrs: fn, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_h0,
  // pad_h1, pad_w0, pad_w1, count_include_pad.
  auto pool = [](int64_t fn, int64_t k, int64_t s, int64_t pad, int64_t include) {
    std::vector<int64_t> a{fn, k, k, s, s, 1, 1, pad, pad, pad, pad, include};
    // Then accumulate 0, final 1 and the kernel's and input's frame in the whole (all 0).
    a.insert(a.end(), {0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
    return a;
  };
  auto act = [](int64_t fn) { return std::vector<int64_t>{fn, real_to_attr(0.01), 0}; };
  const Shape m6{1, 1, 1, 1, 6, 3}, s6{0, 0, 0, 0, 3, 1};
  check_program(
      p,
      {instruction("batchnorm",
                   {f32(at("x"), {1, 2, 4}, {8, 4, 1}), f32(at("bn.scale"), {2}, {1}),
                    f32(at("bn.bias"), {2}, {1}), f32(at("bn.mean"), {2}, {1}),
                    f32(at("bn.var"), {2}, {1}), f32(at("bn"), {1, 2, 4}, {8, 4, 1})},
                   {real_to_attr(1e-5)}),
       // (2 + 1 + 1 - 2) / 1 + 1 = 3
       instruction(
           "pool2d",
           {f32(at("bn"), {1, 2, 2, 2}, {8, 4, 2, 1}), f32(at("mp"), {1, 2, 3, 3}, {18, 9, 3, 1})},
           pool(0, 2, 1, 1, 0)),
       // the stride defaults to the kernel: (3 + 2 - 3) / 3 + 1 = 1
       instruction(
           "pool2d",
           {f32(at("mp"), {1, 2, 3, 3}, {18, 9, 3, 1}), f32(at("ap"), {1, 2, 1, 1}, {2, 1, 1, 1})},
           pool(1, 3, 3, 1, 1)),
       instruction(
           "pool2d",
           {f32(at("mp"), {1, 2, 3, 3}, {18, 9, 3, 1}), f32(at("g"), {1, 2, 1, 1}, {2, 1, 1, 1})},
           pool(1, 3, 3, 0, 0)),
       instruction("softmax", {f32(at("mp"), {6, 3}, {3, 1}), f32(at("s"), {6, 3}, {3, 1})}, {}),
       instruction("layernorm",
                   {f32(at("s"), {6, 3}, {3, 1}), f32(at("ln.gamma"), {3}, {1}),
                    f32(at("ln.beta"), {3}, {1}), f32(at("ln"), {6, 3}, {3, 1})},
                   {real_to_attr(0.001), 0}),
       instruction("activation", {f32(at("ln"), m6, s6), f32(at("ge"), m6, s6)}, act(4)),
       instruction("activation", {f32(at("ge"), m6, s6), f32(at("sg"), m6, s6)}, act(2)),
       instruction("activation", {f32(at("sg"), m6, s6), f32(at("th"), m6, s6)}, act(3))});
  // Data segments: x, then bn's scale, bias, mean, var (var positive), then ln's gamma, beta.
  REQUIRE(p.data.size() == 7);
  const std::vector<std::pair<double, double>> ranges = {
      {-1, 1}, {0.5, 1.5}, {-0.5, 0.5}, {-0.5, 0.5}, {0.5, 1.5}, {0.5, 1.5}, {-0.5, 0.5}};
  for (size_t i = 0; i < ranges.size(); ++i) {
    INFO("segment ", i);
    CHECK(p.data[i].lo == ranges[i].first);
    CHECK(p.data[i].hi == ranges[i].second);
    CHECK(p.data[i].seed == 1000003 + i);
  }
}

TEST_CASE("lrn: the lrn op with the channel window centred as in ONNX") {
  Compilation c =
      compile_with_plan(parse_workload("workload: lrn\n"
                                       "inputs:\n"
                                       "  x: {shape: [1, 6, 2, 2], dtype: f32}\n"
                                       "layers:\n"
                                       "  - {name: n, type: lrn, input: x, size: 4, beta: 0.5}\n",
                                       "lrn.yaml", unfused()),
                        ops());
  // x 96 B -> 0, n 96 B -> 128. lrn attrs: size, alpha, beta, bias, pad_c0, pad_c1, frac_bits.
  check_program(
      c.program,
      {instruction("lrn",
                   {f32(0, {1, 6, 2, 2}, {24, 4, 2, 1}), f32(128, {1, 6, 2, 2}, {24, 4, 2, 1})},
                   {4, real_to_attr(1e-4), real_to_attr(0.5), real_to_attr(1.0), 1, 2, 0})});
}

TEST_CASE("transpose, reshape and concat: views alias, strided inputs are copied once") {
  Compilation c =
      compile_with_plan(parse_workload("workload: views\n"
                                       "inputs:\n"
                                       "  a: {shape: [2, 3], dtype: f32}\n"
                                       "  b: {shape: [2, 2], dtype: f32}\n"
                                       "layers:\n"
                                       "  - {name: t, type: transpose, input: a, perm: [1, 0]}\n"
                                       "  - {name: r, type: relu, input: t}\n"
                                       "  - {name: f, type: reshape, input: r, shape: [-1]}\n"
                                       "  - {name: cat, type: concat, inputs: [a, b], axis: 1}\n"
                                       "outputs: [f, cat]\n",
                                       "views.yaml", unfused()),
                        ops());
  const Program& p = c.program;
  // Whole-program: a 24 B -> 0, b 16 B -> 64, r 24 B -> 128 (f, an output, is a view of r),
  // cat 40 B -> 192; then the contiguous copy of t, live over instructions 0-1, -> 256.
  const uint64_t a = 0, b = 64, r = 128, cat = 192, td = 256;
  CHECK(p.footprint == 320);
  CHECK(c.plan.at("t.dense").first == 0);
  CHECK(c.plan.at("t.dense").last == 1);
  check_program(p, {instruction("eltwise",
                                {f32(a, {1, 1, 1, 1, 3, 2}, {0, 0, 0, 0, 1, 3}),
                                 f32(a, {1, 1, 1, 1, 3, 2}, {0, 0, 0, 0, 1, 3}),
                                 f32(td, {1, 1, 1, 1, 3, 2}, {0, 0, 0, 0, 2, 1})},
                                {kMax}),
                    instruction("activation",
                                {f32(td, {1, 1, 1, 1, 3, 2}, {0, 0, 0, 0, 2, 1}),
                                 f32(r, {1, 1, 1, 1, 3, 2}, {0, 0, 0, 0, 2, 1})},
                                {0, real_to_attr(0.01), 0}),
                    instruction("eltwise",
                                {f32(a, {1, 1, 1, 1, 2, 3}, {0, 0, 0, 0, 3, 1}),
                                 f32(a, {1, 1, 1, 1, 2, 3}, {0, 0, 0, 0, 3, 1}),
                                 f32(cat, {1, 1, 1, 1, 2, 3}, {0, 0, 0, 0, 5, 1})},
                                {kMax}),
                    instruction("eltwise",
                                {f32(b, {1, 1, 1, 1, 2, 2}, {0, 0, 0, 0, 2, 1}),
                                 f32(b, {1, 1, 1, 1, 2, 2}, {0, 0, 0, 0, 2, 1}),
                                 f32(cat + 12, {1, 1, 1, 1, 2, 2}, {0, 0, 0, 0, 5, 1})},
                                {kMax})});
  std::vector<Symbol> symbols = {
      {"a", SymbolRole::input, f32(a, {2, 3}, {3, 1})},
      {"b", SymbolRole::input, f32(b, {2, 2}, {2, 1})},
      {"f", SymbolRole::output, f32(r, {6}, {1})},
      {"cat", SymbolRole::output, f32(cat, {2, 5}, {5, 1})},
  };
  CHECK(p.symbols == symbols);
}

TEST_CASE("concat of channels at batch 1: producers write into their slices, inputs are copied") {
  Compilation c =
      compile_with_plan(parse_workload("workload: cat\n"
                                       "inputs:\n"
                                       "  x: {shape: [1, 2, 2, 2], dtype: f32}\n"
                                       "layers:\n"
                                       "  - {name: r1, type: relu, input: x}\n"
                                       "  - {name: r2, type: sigmoid, input: x}\n"
                                       "  - {name: cat, type: concat, inputs: [r1, x, r2, r1]}\n"
                                       "  - {name: o, type: tanh, input: cat}\n",
                                       "cat.yaml", unfused()),
                        ops());
  const Program& p = c.program;
  // cat is made by r1's lowering and lives over all five instructions, as x and o do: x 32 B
  // -> 0, cat 128 B -> 64, o 128 B -> 192.
  const uint64_t x = 0, cat = 64, o = 192;
  CHECK(p.footprint == 320);
  CHECK(c.plan.at("cat").first == 0);
  CHECK(c.plan.at("cat").last == 4);
  const Shape m{1, 1, 1, 1, 4, 2}, ms{0, 0, 0, 0, 2, 1};
  const Shape v{1, 1, 1, 2, 2, 2}, vs{0, 0, 8, 4, 2, 1}, slice{0, 0, 32, 4, 2, 1};
  auto act = [](int64_t fn) { return std::vector<int64_t>{fn, real_to_attr(0.01), 0}; };
  // r1 and r2 are written in place at channels 0-1 and 4-5; x and the second r1 are copied (as
  // [1,2,2,2] views lifted to rank 6) to channels 2-3 and 6-7; tanh reads the whole buffer.
  check_program(
      p,
      {instruction("activation", {f32(x, m, ms), f32(cat, m, ms)}, act(0)),
       instruction("activation", {f32(x, m, ms), f32(cat + 64, m, ms)}, act(2)),
       instruction("eltwise", {f32(x, v, vs), f32(x, v, vs), f32(cat + 32, v, slice)}, {kMax}),
       instruction("eltwise", {f32(cat, v, vs), f32(cat, v, vs), f32(cat + 96, v, slice)}, {kMax}),
       instruction("activation",
                   {f32(cat, {1, 1, 1, 1, 16, 2}, ms), f32(o, {1, 1, 1, 1, 16, 2}, ms)}, act(3))});
}

TEST_CASE("flatten of an intermediate: no instruction, and the producer lives until the reader") {
  Compilation c = compile_with_plan(
      parse_workload("workload: fl\n"
                     "inputs:\n"
                     "  x: {shape: [2, 2, 2, 2], dtype: f32}\n"
                     "layers:\n"
                     "  - {name: r, type: relu, input: x}\n"
                     "  - {name: f, type: flatten, input: r}\n"
                     "  - {name: fc, type: dense, input: f, units: 3, bias: false}\n"
                     "  - {name: o, type: relu, input: fc}\n",
                     "fl.yaml", unfused()),
      ops());
  const Program& p = c.program;
  REQUIRE(p.instructions.size() == 3);
  // The matmul reads r's bytes as [2, 8].
  CHECK(p.instructions[1].operands[0] == f32(c.plan.at("r").address, {1, 2, 8}, {0, 8, 1}));
  CHECK(c.plan.at("r").first == 0);
  CHECK(c.plan.at("r").last == 1);
  CHECK(c.plan.at("fc").first == 1);
  CHECK(c.plan.at("fc").last == 2);
}

TEST_CASE("the benchmark workloads: instruction counts, footprints and key shapes") {
  // As compiled by default (fused, batchnorms folded) and unfused. Fused, every conv2d and dense
  // is one epilogue op with its bias, batchnorm, residual add and ReLU; what remains are the pools,
  // LRNs and the softmax: mlp 3 dense; alexnet 5 conv + 3 pool + 2 lrn + 3 dense + softmax = 14;
  // vgg16 13 conv + 5 pool + 3 dense + softmax = 22; resnet50 53 conv + 2 pool + dense + softmax
  // = 57.
  struct Expect {
    size_t instructions;
    uint64_t footprint;
    size_t unfused_instructions;
    uint64_t unfused_footprint;
  };
  const std::map<std::string, Expect> expect = {
      {"mlp", {3, 8182336, 8, 8182336}},
      {"alexnet", {14, 246790272, 29, 246790272}},
      {"vgg16", {22, 579726464, 53, 579726464}},
      {"resnet50", {57, 113164672, 176, 114286208}},
      {"resnet50-small", {57, 1532864, 176, 1575424}},
  };
  int count = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(FRACSIM_SOURCE_DIR) + "/workloads")) {
    if (e.path().extension() != ".yaml") continue;
    const std::string name = e.path().stem().string();
    INFO(name);
    REQUIRE(expect.count(name) == 1);
    const Compilation c = compile_with_plan(load_workload(e.path().string()), ops());
    CHECK(c.program.instructions.size() == expect.at(name).instructions);
    CHECK(c.program.footprint == expect.at(name).footprint);
    const Compilation u = compile_with_plan(load_workload(e.path().string(), unfused()), ops());
    CHECK(u.program.instructions.size() == expect.at(name).unfused_instructions);
    CHECK(u.program.footprint == expect.at(name).unfused_footprint);
    ++count;
  }
  CHECK(count == 5);

  const std::string dir = std::string(FRACSIM_SOURCE_DIR) + "/workloads/";
  Workload alex = load_workload(dir + "alexnet.yaml", unfused());
  CHECK(alex.tensor("conv1").shape == Shape{1, 96, 55, 55});
  CHECK(alex.tensor("pool2").shape == Shape{1, 256, 13, 13});
  CHECK(alex.tensor("pool5").shape == Shape{1, 256, 6, 6});
  CHECK(alex.tensor("flat").shape == Shape{1, 9216});
  CHECK(alex.tensor("prob").shape == Shape{1, 1000});
  Workload vgg = load_workload(dir + "vgg16.yaml", unfused());
  CHECK(vgg.tensor("pool5").shape == Shape{1, 512, 7, 7});
  CHECK(vgg.tensor("flat").shape == Shape{1, 25088});
  Workload res = load_workload(dir + "resnet50.yaml", unfused());
  CHECK(res.tensor("pool1").shape == Shape{1, 64, 56, 56});
  CHECK(res.tensor("res2c_relu").shape == Shape{1, 256, 56, 56});
  CHECK(res.tensor("res3a_relu").shape == Shape{1, 512, 28, 28});
  CHECK(res.tensor("res4f_relu").shape == Shape{1, 1024, 14, 14});
  CHECK(res.tensor("res5c_relu").shape == Shape{1, 2048, 7, 7});
  CHECK(res.tensor("pool5").shape == Shape{1, 2048, 1, 1});
  int convs = 0, adds = 0;
  for (const auto& l : res.layers) {
    convs += l.kind == LayerKind::conv2d;
    adds += l.kind == LayerKind::add;
  }
  CHECK(convs == 53);  // 1 + 16 x 3 + 4 projections
  CHECK(adds == 16);
  Workload small = load_workload(dir + "resnet50-small.yaml", unfused());
  CHECK(small.tensor("res5c_relu").shape == Shape{1, 256, 1, 1});
  CHECK(small.tensor("prob").shape == Shape{1, 10});
}
