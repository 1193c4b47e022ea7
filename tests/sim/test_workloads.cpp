// The benchmark workloads end to end: every workload in workloads/ (YAML layer lists and the
// ONNX graphs of scripts/make_workloads) in timing mode on configs/f1.yaml and f100.yaml
// (exact cycles); ResNet-50's one program on three machine scales; the reduced ResNet-50 and
// BERT layer in functional mode on configs/tiny.yaml, every output element checked against
// the reference semantics run on the whole graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/workload.h"
#include "isa/assembly.h"
#include "isa/encoding.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "tests/common/compile_helpers.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

// Through the binary form, as `fracsim run -w x.fbin` does. `workload` is a file name in
// workloads/ without its extension (.yaml, else .onnx), compiled with `options` (by default
// fused, batchnorms folded).
isa::Program program(const std::string& workload, const compiler::CompileOptions& options = {}) {
  const std::string base = kRoot + "/workloads/" + workload;
  const compiler::Workload w = std::filesystem::exists(base + ".yaml")
                                   ? compiler::load_workload(base + ".yaml", options)
                                   : compiler::load_onnx(base + ".onnx", options);
  return isa::decode_program(isa::encode_program(compiler::compile(w, isa::OpTable::builtin())),
                             workload + ".fbin");
}

// The data-movement features off at every level, the fused epilogue after the MAC array and
// hazards told by byte spans: the machine as it was before they existed.
void movement_off(MachineSpec& spec) {
  spec.hazards = HazardCheck::spans;
  for (LevelSpec& l : spec.levels) {
    l.keep_outputs = false;
    l.link.multicast = false;
    l.link.pipelined = false;
    l.link.posted_writes = false;
    l.resident_partial_sums = false;
    l.hold_partial_sums = false;
    l.overlap = false;
    l.prefetch = false;
    l.overlapped_epilogue = false;
  }
}

// The config as shipped (its decomposer, search by default), or with `policy` instead; with
// `policy` halving, also with the data-movement features off (the baseline machine).
RunResult run_on(const std::string& config, const isa::Program& p, Mode mode,
                 std::optional<isa::Policy> policy = std::nullopt) {
  MachineSpec spec = load_machine_spec(kRoot + "/configs/" + config);
  if (policy) spec.decomposer = *policy;
  if (policy == isa::Policy::halving) movement_off(spec);
  return simulate(spec, isa::OpTable::builtin(), p, mode);
}

// The program of `p`'s instruction named `name` alone.
isa::Program only(const isa::Program& p, const std::string& name) {
  const auto at = std::find(p.instruction_names.begin(), p.instruction_names.end(), name);
  REQUIRE(at != p.instruction_names.end());
  const size_t k = static_cast<size_t>(at - p.instruction_names.begin());
  isa::Program one = p;
  one.instructions = {p.instructions[k]};
  one.instruction_names = {p.instruction_names[k]};
  return one;
}

// Per level (the root first), the bytes its nodes wrote back.
std::vector<uint64_t> stores_per_level(const RunResult& r) {
  std::vector<uint64_t> stores;
  for (const NodeReport& n : r.nodes) {
    const size_t l = static_cast<size_t>(n.level + 1);
    if (stores.size() <= l) stores.resize(l + 1, 0);
    stores[l] += n.stats[Counter::store_bytes];
  }
  return stores;
}

}  // namespace

TEST_CASE("every workload in workloads/ runs in timing mode on f1.yaml and f100.yaml") {
  // Exact cycles under each policy: regenerate with `fracsim run -m configs/f1.yaml -w
  // workloads/NAME.onnx` (and f100.yaml; the halving figures are the baseline: the program
  // compiled with --no-fuse --no-fold-bn, `--set decomposer=halving` and every level's
  // data-movement features off, see movement_off); a change is a reviewed change of the
  // compiler, the decomposer or the machine model. A workload added to workloads/ must be added
  // here.
  struct Cycles {
    uint64_t f1_halving, f100_halving, f1_search, f100_search;
  };
  const std::map<std::string, Cycles> expect = {
      {"mlp", {78983, 39612, 30548, 17714}},
      {"alexnet", {1065132, 476162, 594007, 254729}},
      {"vgg16", {12088665, 4459966, 3108260, 848984}},
      {"resnet50", {4013041, 2057136, 810812, 363396}},
      {"resnet50-small", {60223, 441925, 24893, 135528}},
      {"mobilenetv2", {981239, 834294, 320619, 332823}},
      {"lstm", {4563787, 3165654, 3525012, 1554635}},
      {"bert-base", {604968, 206567, 154376, 69648}},
      {"bert-small", {10844, 75178, 3850, 22748}},
      {"gpt2", {5821984, 1183606, 1500067, 408148}},
      {"knn", {2820187, 560590, 1146585, 490182}},
      {"kmeans", {1136660, 538576, 848084, 323647}},
      {"sort", {331674, 83650, 230089, 70654}},
      // torchvision exports (scripts/export_torchvision): PyTorch's own graphs.
      {"resnet18", {1757491, 820420, 326732, 137754}},
      {"mobilenetv2-tv", {971002, 832156, 218771, 209241}},
      {"vit-b16", {13776612, 4482067, 3216543, 1127314}},
  };
  std::set<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(kRoot + "/workloads")) {
    const std::string ext = e.path().extension().string();
    if (ext == ".yaml" || ext == ".onnx") found.insert(e.path().stem().string());
  }
  std::set<std::string> listed;
  for (const auto& [name, cycles] : expect) listed.insert(name);
  CHECK(found == listed);
  for (const auto& [name, cycles] : expect) {
    CAPTURE(name);
    const isa::Program p = program(name), baseline = program(name, testing::unfused());
    const std::tuple<const char*, isa::Policy, uint64_t> runs[] = {
        {"f1.yaml", isa::Policy::halving, cycles.f1_halving},
        {"f100.yaml", isa::Policy::halving, cycles.f100_halving},
        {"f1.yaml", isa::Policy::search, cycles.f1_search},
        {"f100.yaml", isa::Policy::search, cycles.f100_search}};
    for (const auto& [config, policy, want] : runs) {
      CAPTURE(std::string(config));
      CAPTURE(isa::policy_name(policy));
      RunResult r =
          run_on(config, policy == isa::Policy::halving ? baseline : p, Mode::timing, policy);
      CHECK(r.folded);
      CHECK(r.cycles == want);
    }
  }
}

TEST_CASE("one ResNet-50 program on three machine scales (the fractal promise)") {
  // One .fbin, unchanged, on a 16-leaf machine of the scale design, on f1 (32 leaves) and on
  // the multi-chip f100: each decomposes it for its own tree.
  const isa::Program p = program("resnet50"), baseline = program("resnet50", testing::unfused());
  const std::vector<uint8_t> bytes = isa::encode_program(p), baseline_bytes =
                                                                isa::encode_program(baseline);
  // Cycles of the baseline (unfused, halving), then of the default (fused, search).
  const std::vector<std::tuple<std::string, uint64_t, uint64_t>> expect = {
      {"scale/leaves-0016.yaml", 4978953, 1448643},
      {"f1.yaml", 4013041, 810812},
      {"f100.yaml", 2057136, 363396}};
  for (const auto& [config, halving, search] : expect) {
    CAPTURE(config);
    CHECK(isa::encode_program(p) == bytes);
    const isa::Program decoded = isa::decode_program(bytes, "resnet50.fbin");
    CHECK(run_on(config, isa::decode_program(baseline_bytes, "resnet50.fbin"), Mode::timing,
                 isa::Policy::halving)
              .cycles == halving);
    CHECK(run_on(config, decoded, Mode::timing).cycles == search);
  }
}

TEST_CASE("halving cuts a fused conv into the plain conv's pieces") {
  // A 3x3 conv, 128 to 128 channels at 28x28, then batchnorm and ReLU, on 4 cores of 128 KiB
  // under halving. Each core's quarter of the output channels is cut by the sub-block tiling of
  // the plain conv: Co 32 -> 16, Ho 28 -> 7, Ci 128 -> 16, so 2 x 4 x 8 = 64 pieces a core.
  // Fused, the folded bias is an input the epilogue alone reads: holding it in the static
  // segment does not make the whole-memory tiling (1 output pixel a piece) the better one.
  const std::string text =
      "workload: c3\n"
      "inputs:\n"
      "  x: {shape: [1, 128, 28, 28], dtype: f32}\n"
      "layers:\n"
      "  - {name: c, type: conv2d, input: x, filters: 128, kernel: 3, padding: 1, bias: false}\n"
      "  - {name: bn, type: batchnorm, input: c}\n"
      "  - {name: r, type: relu, input: bn}\n";
  MachineSpec spec = load_machine_spec(kRoot + "/configs/scale/leaves-0004.yaml");
  spec.decomposer = isa::Policy::halving;
  auto core_pieces = [&](const compiler::CompileOptions& options, size_t instruction) {
    const isa::Program p =
        compiler::compile(compiler::parse_workload(text, "c3.yaml", options), isa::OpTable::builtin());
    isa::Program one = p;
    one.instructions = {p.instructions.at(instruction)};
    one.instruction_names = {p.instruction_names.at(instruction)};
    uint64_t pieces = 0;
    for (const NodeReport& n : simulate(spec, isa::OpTable::builtin(), one, Mode::timing).nodes)
      if (n.level == 0) pieces += n.stats[Counter::pieces];
    return pieces;
  };
  CHECK(core_pieces(testing::unfused(), 0) == 4 * 64);  // the plain conv
  CHECK(core_pieces({}, 0) == 4 * 64);                  // conv2d_bias_act
}

TEST_CASE("the reduced BERT layer on tiny.yaml matches the reference element by element") {
  // workloads/bert-small.onnx: the bert-base graph at seq 16, hidden 64, 2 heads, FFN 256.
  const isa::Program p = program("bert-small");
  RunResult r = run_on("tiny.yaml", p, Mode::functional);
  std::vector<OutputCheck> checks = check_outputs(p, isa::OpTable::builtin(), r.memory);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].shape == "f32[1,16,64]");
  CHECK(checks[0].elements == 1024);
  CHECK(checks[0].match());
  CHECK(run_on("tiny.yaml", p, Mode::timing).cycles == r.cycles);
}

TEST_CASE("with the data-movement features on, tiny's functional runs match the reference") {
  // tiny ships them off for its hand-derived tests, and the scoreboard of spans; here every
  // level has them on and hazards are told by tiles, under both policies.
  // Pieces that overlapped in the children, per run: an instruction's pieces beside each other
  // (their static tiles sent to each child, not broadcast) and beside the instruction before.
  std::vector<uint64_t> overlapped;
  for (const auto& [name, policy] : {std::pair{"resnet50-small", isa::Policy::halving},
                                     std::pair{"bert-small", isa::Policy::halving},
                                     std::pair{"mlp", isa::Policy::halving},
                                     std::pair{"resnet50-small", isa::Policy::search},
                                     std::pair{"bert-small", isa::Policy::search},
                                     std::pair{"mlp", isa::Policy::search}}) {
    CAPTURE(name);
    CAPTURE(isa::policy_name(policy));
    const isa::Program p = program(name);
    MachineSpec spec = load_machine_spec(kRoot + "/configs/tiny.yaml");
    spec.decomposer = policy;
    spec.hazards = HazardCheck::tiles;
    for (LevelSpec& l : spec.levels) {
      l.keep_outputs = true;
      l.link.multicast = true;
      l.link.pipelined = true;
      l.resident_partial_sums = true;
      l.hold_partial_sums = true;
      l.overlap = true;
      l.prefetch = true;
    }
    RunResult r = simulate(spec, isa::OpTable::builtin(), p, Mode::functional);
    for (const OutputCheck& c : check_outputs(p, isa::OpTable::builtin(), r.memory)) {
      CAPTURE(c.name);
      CHECK(c.match());
    }
    const RunResult t = simulate(spec, isa::OpTable::builtin(), p, Mode::timing);
    CHECK(t.cycles == r.cycles);
    uint64_t hits = 0;
    overlapped.push_back(0);
    std::vector<uint64_t> resident(spec.levels.size() + 1, 0);  // per level, the root first
    for (const NodeReport& n : r.nodes) {
      hits += n.stats[Counter::static_hits];
      resident[static_cast<size_t>(n.level + 1)] += n.stats[Counter::resident_bytes];
      overlapped.back() += n.stats[Counter::overlapped_pieces];
    }
    if (std::string(name) != "mlp") CHECK(hits > 0);  // the MLP on tiny has none
    // Partial sums stay resident: the cores' units accumulate into their memory under search;
    // the cluster's children into its memory for resnet50-small under search and the MLP under
    // both (bert-small's cluster splits no reduce dim serially: its children would read every
    // tile back).
    if (policy == isa::Policy::search) CHECK(resident[2] > 0);
    if (std::string(name) == "mlp" ||
        (std::string(name) == "resnet50-small" && policy == isa::Policy::search))
      CHECK(resident[1] > 0);
  }
  CHECK(fmt::format("{}", fmt::join(overlapped, " ")) == "62 16 126 708 96 172");
}

TEST_CASE("the reduced ResNet-50 on tiny.yaml matches the reference element by element") {
  const isa::Program p = program("resnet50-small");
  RunResult r = run_on("tiny.yaml", p, Mode::functional);
  std::vector<OutputCheck> checks = check_outputs(p, isa::OpTable::builtin(), r.memory);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].name == "prob");
  CHECK(checks[0].shape == "f32[1,10]");
  CHECK(checks[0].elements == 10);
  CHECK(checks[0].match());
  CHECK(checks[0].bit_exact == 10);
  CHECK(r.cycles == 142898);
  // Timing mode gives the same cycles.
  CHECK(run_on("tiny.yaml", p, Mode::timing).cycles == 142898);
}

TEST_CASE("every CNN layer type, views and concat by layout: functional on tiny.yaml") {
  // A small graph through every new layer type; outputs include a view (t, strided) and a
  // slice written in place by its producer (b1).
  const isa::Program p = compiler::compile(
      compiler::parse_workload(
          "workload: zoo\n"
          "inputs:\n"
          "  x: {shape: [1, 4, 9, 9], dtype: f32}\n"
          "layers:\n"
          "  - {name: c1, type: conv2d, input: x, filters: 8, kernel: 3, padding: 1, groups: 2}\n"
          "  - {name: b1, type: batchnorm, input: c1}\n"
          "  - {name: c2, type: conv2d, input: x, filters: 4, kernel: 3, stride: 2, padding: 1,\n"
          "     dilation: 2, bias: false}\n"
          "  - {name: n1, type: lrn, input: b1, size: 3, alpha: 0.01, bias: 2}\n"
          "  - {name: m2, type: maxpool, input: n1, kernel: 3, stride: 2, padding: 1}\n"
          "  - {name: cat, type: concat, inputs: [b1, x]}\n"
          "  - {name: a2, type: avgpool, input: cat, kernel: 2, padding: 1}\n"
          "  - {name: g, type: gelu, input: a2}\n"
          "  - {name: t, type: transpose, input: g, perm: [0, 2, 3, 1]}\n"
          "  - {name: s, type: sigmoid, input: t}\n"
          "  - {name: ln, type: layernorm, input: s}\n"
          "  - {name: gp, type: global_avgpool, input: m2}\n"
          "  - {name: f, type: flatten, input: gp}\n"
          "  - {name: th, type: tanh, input: f}\n"
          "  - {name: sm, type: softmax, input: th}\n"
          "  - {name: r, type: reshape, input: c2, shape: [4, -1]}\n"
          "outputs: [b1, t, ln, sm, r]\n",
          "zoo.yaml"),
      isa::OpTable::builtin());
  RunResult r = run_on("tiny.yaml", p, Mode::functional);
  std::vector<OutputCheck> checks = check_outputs(p, isa::OpTable::builtin(), r.memory);
  REQUIRE(checks.size() == 5);
  for (const OutputCheck& c : checks) {
    CAPTURE(c.name);
    CHECK(c.match());
    CHECK(c.elements > 0);
  }
  CHECK(checks[1].shape == "f32[1,5,5,12]");  // (9 + 1 + 1 - 2) / 2 + 1 = 5
}

TEST_CASE("f1's cores tile the chip's pieces as a run: res4b_2b's partial sums stay held") {
  // ResNet-50's res4b_2b (3x3, 256 -> 256 channels at 14x14) alone on f1. The chip splits its
  // Ci into pieces, each giving every core a run of accumulating instructions; the cores tile
  // them for the run (isa/decompose/README.md, "A leaf in a run"), all alike, so each core
  // holds its part of the output from one to the next: the cores write the output back once,
  // 256 x 14 x 14 x 4 = 200,704 bytes. Tiled each as alone (the chip's 3 pieces of 86, 85 and
  // 85 channels cut by a core into pieces of 8 and of 5: two sub-block sizes), a core wrote its
  // part back and loaded it again after the first of them: 401,408 bytes, 20,792 cycles.
  const RunResult r = run_on("f1.yaml", only(program("resnet50"), "res4b_2b"), Mode::timing);
  uint64_t chip_pieces = 0;
  for (const NodeReport& n : r.nodes)
    if (n.level == 0) chip_pieces += n.stats[Counter::pieces];
  CHECK(chip_pieces == 16);
  CHECK(stores_per_level(r) == std::vector<uint64_t>{0, 256 * 14 * 14 * 4, 256 * 14 * 14 * 4});
  CHECK(r.cycles == 18532);
}

TEST_CASE("the last piece of a tile, which runs the fused epilogue, is split as its first") {
  // ResNet-50's res5a_2c at batch 3 as one chip of scale/leaves-0256 gives a cluster (1x1,
  // 512 -> 128 channels at 7x7, bias, residual add and ReLU fused): scale/leaves-0016 with one
  // cluster. The cluster splits Ci serially in two pieces per output tile; the first clears
  // `epilogue`, the last keeps it (it completes the sum). The last is split across the 4 cores
  // as the first, whose shape is the last's with both `accumulate` and `epilogue` clear
  // (isa::starting_instruction), so each core continues its own part of the tile and writes
  // it back once: 3 x 128 x 7 x 7 x 4 = 75,264 bytes. Split as the first with `epilogue` set
  // would be (a shape no piece has), the cores wrote 150,528 bytes, 24,113 cycles.
  MachineSpec spec = load_machine_spec(kRoot + "/configs/scale/leaves-0016.yaml");
  spec.levels[0].fanout = 1;
  const isa::Program p = isa::assemble(
      ".program res5a_2c\n"
      ".footprint 3221504\n"
      "conv2d_bias_add_act in=f32@0x0[3,1,512,7,7:25088,25088,49,7,1] "
      "w=f32@0x100000[1,128,512,1,1:65536,512,1,1,1] bias=f32@0x200000[1,128:128,1] "
      "res=f32@0x210000[3,1,128,7,7:6272,6272,49,7,1] "
      "out=f32@0x300000[3,1,128,7,7:6272,6272,49,7,1] stride_h=1 stride_w=1 dilation_h=1 "
      "dilation_w=1 pad_h0=0 pad_h1=0 pad_w0=0 pad_w1=0 accumulate=0 epilogue=1 act=relu "
      "alpha=0.01 lo=0 hi=6\n",
      "res5a_2c.fasm", isa::OpTable::builtin());
  const RunResult r = simulate(spec, isa::OpTable::builtin(), p, Mode::timing);
  CHECK(stores_per_level(r) == std::vector<uint64_t>{0, 3 * 128 * 49 * 4, 3 * 128 * 49 * 4});
  CHECK(r.cycles == 20023);
}

TEST_CASE("the pieces of one output tile are split alike across the children, which hold it") {
  // ResNet-50's res2a_2b (3x3, 64 -> 64 channels at 56x56) alone on scale/leaves-0016. A
  // cluster's pieces along Ci accumulate onto one resident tile; the piece that accumulates is
  // split across the 4 cores as the one that starts the tile (isa/decompose/README.md, "Parallel
  // partition"), so each core continues its own part of it and writes it back once: every level
  // writes the output, 64 x 56 x 56 x 4 = 802,816 bytes, once. Split as its own shape would be,
  // the cores wrote 1,003,520 bytes, 40,621 cycles.
  const RunResult r =
      run_on("scale/leaves-0016.yaml", only(program("resnet50"), "res2a_2b"), Mode::timing);
  CHECK(stores_per_level(r) == std::vector<uint64_t>{0, 64 * 56 * 56 * 4, 64 * 56 * 56 * 4});
  CHECK(r.cycles == 34959);
}
