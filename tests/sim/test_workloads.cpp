// The benchmark workloads end to end: AlexNet, VGG-16 and ResNet-50 in timing mode on
// configs/f1.yaml (exact cycles), and the reduced ResNet-50 in functional mode on
// configs/tiny.yaml, every output element checked against the reference semantics.
#include <doctest/doctest.h>

#include <string>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/encoding.h"
#include "sim/machine.h"
#include "sim/report.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

// Through the binary form, as `fracsim run -w x.fbin` does.
isa::Program program(const std::string& workload) {
  return isa::decode_program(
      isa::encode_program(
          compiler::compile(compiler::load_workload(kRoot + "/workloads/" + workload + ".yaml"),
                            isa::OpTable::builtin())),
      workload + ".fbin");
}

RunResult run_on(const std::string& config, const isa::Program& p, Mode mode) {
  return simulate(load_machine_spec(kRoot + "/configs/" + config), isa::OpTable::builtin(), p,
                  mode);
}

}  // namespace

TEST_CASE("AlexNet, VGG-16 and ResNet-50 run in timing mode on f1.yaml: exact cycles") {
  // Regenerate with `fracsim run -m configs/f1.yaml -w workloads/NAME.yaml`; a change is a
  // reviewed change of the compiler or the machine model.
  const std::vector<std::pair<std::string, uint64_t>> expect = {
      {"alexnet", 1065132}, {"vgg16", 12088665}, {"resnet50", 4013041}};
  for (const auto& [name, cycles] : expect) {
    CAPTURE(name);
    RunResult r = run_on("f1.yaml", program(name), Mode::timing);
    CHECK(r.folded);
    CHECK(r.cycles == cycles);
  }
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
  CHECK(r.cycles == 191478);
  // Timing mode gives the same cycles.
  CHECK(run_on("tiny.yaml", p, Mode::timing).cycles == 191478);
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
