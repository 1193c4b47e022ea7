// Lowering to FRISA and root-memory planning: exact instruction lists, data segments, symbols,
// addresses and footprints, worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "compiler/lowering.h"
#include "compiler/memory_plan.h"
#include "compiler/workload.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/common/compile_helpers.h"
#include "tests/common/instruction_helpers.h"

using fracsim::compiler::Compilation;
using fracsim::compiler::compile;
using fracsim::compiler::compile_with_plan;
using fracsim::compiler::load_workload;
using fracsim::compiler::MemoryPlan;
using fracsim::compiler::parse_workload;
using fracsim::compiler::segment_seed;
using fracsim::compiler::TensorLifetime;
using fracsim::compiler::TensorPlacement;
using fracsim::isa::DataSegment;
using fracsim::isa::DType;
using fracsim::isa::Instruction;
using fracsim::isa::OpTable;
using fracsim::isa::Program;
using fracsim::isa::Shape;
using fracsim::isa::Symbol;
using fracsim::isa::SymbolRole;
using fracsim::isa::TensorRef;

namespace {

using fracsim::testing::instruction;
using fracsim::testing::unfused;

const OpTable& ops() { return OpTable::builtin(); }

TensorRef ref(uint64_t address, DType dtype, Shape shape, Shape strides) {
  return TensorRef{address, dtype, std::move(shape), std::move(strides)};
}

// activation's attributes for relu: fn relu (0), the default alpha 0.01, frac_bits 0.
const std::vector<int64_t> kRelu = {0, fracsim::isa::real_to_attr(0.01), 0};

DataSegment random_segment(uint64_t address, DType dtype, uint64_t count, uint64_t seed, double lo,
                           double hi) {
  DataSegment d;
  d.kind = DataSegment::Kind::random;
  d.address = address;
  d.dtype = dtype;
  d.count = count;
  d.seed = seed;
  d.lo = lo;
  d.hi = hi;
  return d;
}

// Independent of MemoryPlan's own helpers: inclusive instruction ranges meet, byte ranges meet.
void check_no_live_overlap(const MemoryPlan& plan) {
  const auto& ts = plan.tensors();
  for (size_t i = 0; i < ts.size(); ++i) {
    CHECK(ts[i].address % 64 == 0);
    CHECK(ts[i].address + ts[i].bytes <= plan.footprint());
    for (size_t j = i + 1; j < ts.size(); ++j) {
      bool live_together = ts[i].first <= ts[j].last && ts[j].first <= ts[i].last;
      bool bytes_meet = ts[i].address < ts[j].address + ts[j].bytes &&
                        ts[j].address < ts[i].address + ts[i].bytes;
      INFO(ts[i].name, " and ", ts[j].name);
      CHECK_FALSE((live_together && bytes_meet));
    }
  }
}

const char* const kTiny =
    "workload: tiny\n"
    "seed: 7\n"
    "inputs:\n"
    "  x: {shape: [2, 3], dtype: f32}\n"
    "layers:\n"
    "  - {name: fc, type: dense, input: x, units: 4}\n"
    "  - {name: act, type: relu, input: fc}\n";

}  // namespace

TEST_CASE("first fit: hand-worked placement with reuse after the last use") {
  // w lives throughout; A, B, C, D come and go. Listed with w last: whole-program tensors are
  // placed first whatever the order.
  std::vector<TensorLifetime> req = {
      {"A", 64, 0, 1}, {"B", 100, 1, 2}, {"C", 64, 2, 3}, {"D", 10, 3, 3}, {"w", 100, 0, 3}};
  MemoryPlan plan = MemoryPlan::first_fit(req);
  REQUIRE(plan.tensors().size() == 5);
  // w [0,100); A cannot share with w: 128; B is live with w and A: 192; C is live with w and B
  // only, and fits in [128,192) once A is dead; D is live with w and C: 192, where B was.
  CHECK(plan.at("w").address == 0);
  CHECK(plan.at("A").address == 128);
  CHECK(plan.at("B").address == 192);
  CHECK(plan.at("C").address == 128);
  CHECK(plan.at("D").address == 192);
  CHECK(plan.footprint() == 320);        // B ends at 292
  CHECK(plan.tensors()[0].name == "A");  // request order is kept
  CHECK(plan.tensors()[4].name == "w");
  CHECK(plan.tensors()[1].first == 1);
  CHECK(plan.tensors()[1].last == 2);
  CHECK(plan.tensors()[1].bytes == 100);
  check_no_live_overlap(plan);

  // With 16-byte alignment, everything packs tighter.
  MemoryPlan tight = MemoryPlan::first_fit(req, 16);
  CHECK(tight.at("A").address == 112);
  CHECK(tight.at("B").address == 176);
  CHECK(tight.at("C").address == 112);
  CHECK(tight.at("D").address == 176);
  CHECK(tight.footprint() == 288);
}

TEST_CASE("first fit: a tensor fits in a gap between two live ones") {
  std::vector<TensorLifetime> req = {
      {"P", 64, 0, 3}, {"Q", 64, 0, 1}, {"R", 64, 1, 3}, {"S", 64, 2, 3}, {"T", 65, 2, 3}};
  MemoryPlan plan = MemoryPlan::first_fit(req);
  CHECK(plan.at("P").address == 0);
  CHECK(plan.at("Q").address == 64);
  CHECK(plan.at("R").address == 128);
  CHECK(plan.at("S").address == 64);   // Q is dead by instruction 2: between P and R
  CHECK(plan.at("T").address == 192);  // 65 bytes do not fit where S went
  CHECK(plan.footprint() == 320);
  check_no_live_overlap(plan);
}

TEST_CASE("tiny dense + relu: the exact program") {
  Compilation c = compile_with_plan(parse_workload(kTiny, "tiny.yaml", unfused()), ops());
  const Program& p = c.program;
  CHECK(p.name == "tiny");
  // Every tensor is live from instruction 0 to 2 (fc is produced by the first instruction and
  // read by the last), so all are placed in order: x 24 B -> 0; fc.weight 48 B -> 64; fc.bias
  // 16 B -> 128; fc 32 B -> 192; act 32 B -> 256, ending at 288.
  CHECK(p.footprint == 320);
  CHECK(c.plan.footprint() == 320);
  const uint64_t x = 0, w = 64, b = 128, fc = 192, act = 256;
  CHECK(c.plan.at("fc").address == fc);
  CHECK(c.plan.at("fc").first == 0);
  CHECK(c.plan.at("fc").last == 2);
  CHECK(c.plan.at("act").first == 0);
  CHECK(c.plan.at("act").last == 2);
  // Matrices are a batch of one for matmul, and seen with four leading dims of extent 1 by the
  // rank-6 eltwise and activation; every added dim has stride 0.
  std::vector<Instruction> expect = {
      instruction(
          "matmul",
          {ref(x, DType::f32, {1, 2, 3}, {0, 3, 1}), ref(w, DType::f32, {1, 3, 4}, {0, 4, 1}),
           ref(fc, DType::f32, {1, 2, 4}, {0, 4, 1})},
          {0}),
      instruction("eltwise",
                  {ref(fc, DType::f32, {1, 1, 1, 1, 2, 4}, {0, 0, 0, 0, 4, 1}),
                   ref(b, DType::f32, {1, 1, 1, 1, 2, 4}, {0, 0, 0, 0, 0, 1}),
                   ref(fc, DType::f32, {1, 1, 1, 1, 2, 4}, {0, 0, 0, 0, 4, 1})},
                  {0}),
      instruction("activation",
                  {ref(fc, DType::f32, {1, 1, 1, 1, 2, 4}, {0, 0, 0, 0, 4, 1}),
                   ref(act, DType::f32, {1, 1, 1, 1, 2, 4}, {0, 0, 0, 0, 4, 1})},
                  kRelu),
  };
  REQUIRE(p.instructions.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("instruction ", i);
    CHECK(p.instructions[i] == expect[i]);
  }
  CHECK(ops().get("matmul").opcode == 0x01);
  CHECK(ops().get("eltwise").opcode == 0x02);
  CHECK(ops().get("activation").opcode == 0x03);

  const double r = 1.0 / std::sqrt(3.0);
  std::vector<DataSegment> data = {
      random_segment(x, DType::f32, 6, 7000021, -1.0, 1.0),
      random_segment(w, DType::f32, 12, 7000022, -r, r),
      random_segment(b, DType::f32, 4, 7000023, -r, r),
  };
  CHECK(p.data == data);
  CHECK(segment_seed(7, 2) == 7000023);

  std::vector<Symbol> symbols = {
      {"x", SymbolRole::input, ref(x, DType::f32, {2, 3}, {3, 1})},
      {"fc.weight", SymbolRole::weight, ref(w, DType::f32, {3, 4}, {4, 1})},
      {"fc.bias", SymbolRole::weight, ref(b, DType::f32, {4}, {1})},
      {"act", SymbolRole::output, ref(act, DType::f32, {2, 4}, {4, 1})},
  };
  CHECK(p.symbols == symbols);
  // Named by their layers: dense is matmul + the bias add.
  CHECK(p.instruction_names == std::vector<std::string>{"fc", "fc", "act"});
  CHECK(compile(parse_workload(kTiny, "tiny.yaml", unfused()), ops()) == p);  // deterministic
}

TEST_CASE("dense without bias: a single matmul and no bias tensor") {
  std::string text = kTiny;
  text.replace(text.find("units: 4}"), 9, "units: 4, bias: false}");
  Program p = compile(parse_workload(text, "t.yaml", unfused()), ops());
  REQUIRE(p.instructions.size() == 2);
  CHECK(p.instructions[0].opcode == ops().get("matmul").opcode);
  CHECK(p.instructions[1].opcode == ops().get("activation").opcode);
  REQUIRE(p.symbols.size() == 3);
  CHECK(p.symbols[1].name == "fc.weight");
  CHECK(p.symbols[2].name == "act");
  CHECK(p.data.size() == 2);
  // x 0, fc.weight 64, fc 128, act 192 (ends at 224).
  CHECK(p.footprint == 256);
}

TEST_CASE("add with a broadcast row, rank-1 and rank-3 relu, integer matmul: operand views") {
  Compilation c = compile_with_plan(parse_workload("workload: views\n"
                                                   "inputs:\n"
                                                   "  a: {shape: [2, 3, 4], dtype: f32}\n"
                                                   "  row: {shape: [4], dtype: f32}\n"
                                                   "  p: {shape: [5, 6], dtype: i8}\n"
                                                   "  q: {shape: [6, 7], dtype: i8}\n"
                                                   "layers:\n"
                                                   "  - {name: s, type: add, inputs: [a, row]}\n"
                                                   "  - {name: r, type: relu, input: s}\n"
                                                   "  - {name: r1, type: relu, input: row}\n"
                                                   "  - {name: mm, type: matmul, inputs: [p, q]}\n"
                                                   "outputs: [r, r1, mm]\n",
                                                   "views.yaml", unfused()),
                                    ops());
  const Program& p = c.program;
  // Whole-program tensors in order: a 96 B -> 0, row 16 B -> 128, p 30 B -> 192, q 42 B -> 256,
  // r 96 B -> 320, r1 16 B -> 448, mm 140 B (i32) -> 512, ending at 652; then s -> 704.
  const uint64_t a = 0, row = 128, pa = 192, qa = 256, r = 320, r1 = 448, mm = 512, s = 704;
  CHECK(p.footprint == 832);
  // [2,3,4] is seen as the matrix [6,4] and the row [4] as [1,4], then with leading dims of
  // extent 1 and stride 0 up to the op's rank.
  std::vector<Instruction> expect = {
      instruction("eltwise",
                  {ref(a, DType::f32, {1, 1, 1, 1, 6, 4}, {0, 0, 0, 0, 4, 1}),
                   ref(row, DType::f32, {1, 1, 1, 1, 6, 4}, {0, 0, 0, 0, 0, 1}),
                   ref(s, DType::f32, {1, 1, 1, 1, 6, 4}, {0, 0, 0, 0, 4, 1})},
                  {0}),
      instruction("activation",
                  {ref(s, DType::f32, {1, 1, 1, 1, 6, 4}, {0, 0, 0, 0, 4, 1}),
                   ref(r, DType::f32, {1, 1, 1, 1, 6, 4}, {0, 0, 0, 0, 4, 1})},
                  kRelu),
      instruction("activation",
                  {ref(row, DType::f32, {1, 1, 1, 1, 1, 4}, {0, 0, 0, 0, 4, 1}),
                   ref(r1, DType::f32, {1, 1, 1, 1, 1, 4}, {0, 0, 0, 0, 4, 1})},
                  kRelu),
      instruction(
          "matmul",
          {ref(pa, DType::i8, {1, 5, 6}, {0, 6, 1}), ref(qa, DType::i8, {1, 6, 7}, {0, 7, 1}),
           ref(mm, DType::i32, {1, 5, 7}, {0, 7, 1})},
          {0}),
  };
  REQUIRE(p.instructions.size() == expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("instruction ", i);
    CHECK(p.instructions[i] == expect[i]);
  }
  std::vector<DataSegment> data = {
      random_segment(a, DType::f32, 24, 1000003, -1.0, 1.0),
      random_segment(row, DType::f32, 4, 1000004, -1.0, 1.0),
      random_segment(pa, DType::i8, 30, 1000005, -8.0, 8.0),
      random_segment(qa, DType::i8, 42, 1000006, -8.0, 8.0),
  };
  CHECK(p.data == data);
  std::vector<Symbol> symbols = {
      {"a", SymbolRole::input, ref(a, DType::f32, {2, 3, 4}, {12, 4, 1})},
      {"row", SymbolRole::input, ref(row, DType::f32, {4}, {1})},
      {"p", SymbolRole::input, ref(pa, DType::i8, {5, 6}, {6, 1})},
      {"q", SymbolRole::input, ref(qa, DType::i8, {6, 7}, {7, 1})},
      {"r", SymbolRole::output, ref(r, DType::f32, {2, 3, 4}, {12, 4, 1})},
      {"r1", SymbolRole::output, ref(r1, DType::f32, {4}, {1})},
      {"mm", SymbolRole::output, ref(mm, DType::i32, {5, 7}, {7, 1})},
  };
  CHECK(p.symbols == symbols);
  CHECK(c.plan.at("s").first == 0);
  CHECK(c.plan.at("s").last == 1);
}

TEST_CASE("mlp: liveness reuse, exact footprint, no overlap of live tensors") {
  Compilation c = compile_with_plan(
      load_workload(std::string(FRACSIM_SOURCE_DIR) + "/workloads/mlp.yaml", unfused()), ops());
  const Program& p = c.program;
  CHECK(p.name == "mlp");
  // Per dense layer: matmul then the bias add; a relu after the first two.
  const uint16_t mm = ops().get("matmul").opcode, ew = ops().get("eltwise").opcode,
                 act = ops().get("activation").opcode;
  std::vector<uint16_t> opcodes;
  for (const Instruction& in : p.instructions) opcodes.push_back(in.opcode);
  CHECK(opcodes == std::vector<uint16_t>{mm, ew, act, mm, ew, act, mm, ew});

  uint64_t sum = 0;
  for (const TensorPlacement& t : c.plan.tensors()) sum += t.bytes;
  CHECK(sum == 8706600);  // 200704 + weights 7454760 + fc3 2560 + four intermediates of 262144
  // Whole-program tensors take [0, 7658048) (fc3.bias padded from 40 to 64 bytes); the four
  // [64,1024] intermediates need only two slots: fc2 reuses fc1's bytes, relu2 relu1's.
  CHECK(p.footprint == 8182336);
  CHECK(p.footprint < sum);
  CHECK(c.plan.at("fc3").address == 7655488);
  CHECK(c.plan.at("fc1").address == 7658048);
  CHECK(c.plan.at("relu1").address == 7658048 + 262144);
  CHECK(c.plan.at("fc2").address == c.plan.at("fc1").address);
  CHECK(c.plan.at("relu2").address == c.plan.at("relu1").address);
  CHECK(c.plan.at("fc1").first == 0);
  CHECK(c.plan.at("fc1").last == 2);
  CHECK(c.plan.at("relu2").first == 5);
  CHECK(c.plan.at("relu2").last == 6);
  CHECK(c.plan.at("x").last == 7);
  check_no_live_overlap(c.plan);

  // The third matmul reads relu2 and the [1024,10] weight and writes the output.
  CHECK(p.instructions[6] ==
        instruction("matmul",
                    {ref(7658048 + 262144, DType::f32, {1, 64, 1024}, {0, 1024, 1}),
                     ref(c.plan.at("fc3.weight").address, DType::f32, {1, 1024, 10}, {0, 10, 1}),
                     ref(7655488, DType::f32, {1, 64, 10}, {0, 10, 1})},
                    {0}));
  REQUIRE(p.data.size() == 7);
  CHECK(p.data[1].lo == -1.0 / std::sqrt(784.0));
  CHECK(p.data[3].hi == 1.0 / std::sqrt(1024.0));
  CHECK(p.data[6].count == 10);
  CHECK(p.data[6].seed == 1000009);
  REQUIRE(p.symbols.size() == 8);
  CHECK(p.symbols.back().name == "fc3");
  CHECK(p.symbols.back().role == SymbolRole::output);
}

TEST_CASE("every workload in workloads/ compiles and validates") {
  int count = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(FRACSIM_SOURCE_DIR) + "/workloads")) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().string());
    Compilation c = compile_with_plan(load_workload(e.path().string()), ops());
    CHECK(!c.program.instructions.empty());
    CHECK(c.program.footprint == c.plan.footprint());
    check_no_live_overlap(c.plan);
    ++count;
  }
  CHECK(count >= 1);
}

// Every instruction carries the name of the YAML layer it lowers: the distinct names, in order,
// are the layers that emit instructions (all but the views), read from the file itself.
TEST_CASE("resnet50: every instruction is named by its layer") {
  const std::string path = std::string(FRACSIM_SOURCE_DIR) + "/workloads/resnet50.yaml";
  std::vector<std::string> expect;
  for (const YAML::Node& l : YAML::LoadFile(path)["layers"]) {
    const std::string type = l["type"].as<std::string>();
    if (type != "flatten" && type != "reshape" && type != "transpose")
      expect.push_back(l["name"].as<std::string>());
  }
  const Program p = compile(load_workload(path, unfused()), ops());
  REQUIRE(p.instruction_names.size() == p.instructions.size());
  // Runs of one name: each layer's instructions are consecutive, and no name is empty.
  std::vector<std::string> runs;
  std::map<std::string, int> count;
  for (const std::string& n : p.instruction_names) {
    CHECK(!n.empty());
    if (runs.empty() || runs.back() != n) runs.push_back(n);
    ++count[n];
  }
  CHECK(expect.size() > 100);
  CHECK(runs == expect);
  // dense (with bias) and a conv2d with a bias are the op, then the bias add; a conv2d without
  // one, the activations, pools and normalisations one instruction.
  for (const YAML::Node& l : YAML::LoadFile(path)["layers"]) {
    const std::string type = l["type"].as<std::string>(), name = l["name"].as<std::string>();
    INFO(name);
    const bool bias = !l["bias"] || l["bias"].as<bool>();
    if (type == "dense" || type == "conv2d") CHECK(count[name] == (bias ? 2 : 1));
    if (type == "relu" || type == "maxpool" || type == "batchnorm") CHECK(count[name] == 1);
  }
}
