// Workloads at another batch (CompileOptions::batch): the work of the program scales exactly
// with the batch, the shipped workloads that take one and the ones that cannot (with the reason),
// and the exact messages for each way a graph can pin the batch.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/workload.h"
#include "isa/error.h"
#include "isa/op_def.h"
#include "tests/compiler/onnx_model_builder.h"

using namespace fracsim;
using compiler::CompileOptions;
using compiler::Workload;
using isa::Shape;
using testing::OnnxModelBuilder;
using testing::set_attr;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
const std::string kRoot = FRACSIM_SOURCE_DIR;

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

CompileOptions at(int64_t batch) {
  CompileOptions o;
  o.batch = batch;
  return o;
}

// A workload file of workloads/, as written or at `options`.
Workload load(const std::string& name, const CompileOptions& options = {}) {
  const std::string path = kRoot + "/workloads/" + name;
  return name.size() > 5 && name.substr(name.size() - 5) == ".onnx"
             ? compiler::load_onnx(path, options)
             : compiler::load_workload(path, options);
}

// The sum over the program's instructions of their work (isa::instruction_work).
int64_t total_work(const isa::Program& p) {
  int64_t work = 0;
  for (const isa::Instruction& i : p.instructions)
    work += isa::instruction_work(ops().get(i.opcode), i);
  return work;
}

// The part of total_work that does not grow with the batch: batchnorm's work is
// 3*N*C*S + 4*C (isa/ops/ext/batchnorm.yaml), its factor per channel, rsqrt(var + eps) * scale,
// computed once per instruction.
int64_t per_channel_work(const isa::Program& p) {
  int64_t work = 0;
  for (const isa::Instruction& i : p.instructions)
    if (ops().get(i.opcode).name == "batchnorm") work += 4 * i.operands[1].shape[0];
  return work;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string yaml_error(const std::string& text, int64_t batch) {
  return error_of([&] { compiler::parse_workload(text, "w.yaml", at(batch)); });
}

std::string onnx_error(const OnnxModelBuilder& b, int64_t batch) {
  return error_of([&] { compiler::import_onnx(b.model(), "m.onnx", {}, at(batch)); });
}

}  // namespace

TEST_CASE("--batch 64 multiplies the work of resnet50.yaml and mobilenetv2.onnx by exactly 64") {
  for (const char* name : {"resnet50.yaml", "mobilenetv2.onnx"})
    for (const bool fold : {true, false}) {
      CAPTURE(name);
      CAPTURE(fold);
      CompileOptions as_written, batched = at(64);
      as_written.fold_batchnorm = batched.fold_batchnorm = fold;
      const Workload one = load(name, as_written), many = load(name, batched);
      REQUIRE(one.inputs[0].shape[0] == 1);  // written at batch 1
      CHECK(many.inputs[0].shape[0] == 64);
      CHECK(many.name == one.name);
      const isa::Program p1 = compiler::compile(one, ops()), p64 = compiler::compile(many, ops());
      CHECK(p64.name == p1.name);
      CHECK(p64.instructions.size() == p1.instructions.size());
      // All but batchnorm's work per channel, which is the same at any batch; folded, no
      // batchnorm is left.
      CHECK((per_channel_work(p1) > 0) == !fold);
      CHECK(per_channel_work(p64) == per_channel_work(p1));
      CHECK(total_work(p64) - per_channel_work(p64) ==
            64 * (total_work(p1) - per_channel_work(p1)));
    }
}

TEST_CASE("--batch scales mlp.yaml from its written batch of 64, and at 64 changes nothing") {
  const Workload eight = load("mlp.yaml", at(8));
  CHECK(eight.inputs[0].shape == Shape{8, 784});
  CHECK(eight.layers.back().output.shape == Shape{8, 10});
  const isa::Program p = compiler::compile(load("mlp.yaml"), ops());
  CHECK(total_work(compiler::compile(eight, ops())) * 8 == total_work(p));
  CHECK(compiler::compile(load("mlp.yaml", at(64)), ops()) == p);
}

TEST_CASE("which shipped workloads take --batch, and why the others cannot") {
  // Every YAML network and the ONNX graphs whose inputs lead with the batch.
  for (const char* name : {"mlp.yaml", "alexnet.yaml", "vgg16.yaml", "resnet50.yaml",
                           "resnet50-small.yaml", "mobilenetv2.onnx", "lstm.onnx", "knn.onnx"}) {
    CAPTURE(name);
    const Workload w = load(name, at(3));
    CHECK(compiler::compile(w, ops()).instructions.size() > 0);
  }
  // lstm: every step's x, h and c lead with the batch; the weights do not.
  const Workload lstm = load("lstm.onnx", at(3));
  CHECK(lstm.tensor("x_49").shape == Shape{3, 1024});
  CHECK(lstm.tensor("lstm.xi.weight").shape == Shape{1024, 1024});
  CHECK(lstm.tensor("h_last").shape == Shape{3, 1024});
  // knn: a batch of queries against the same points.
  const Workload knn = load("knn.onnx", at(3));
  CHECK(knn.tensor("queries").shape == Shape{3, 128});
  CHECK(knn.tensor("points").shape == Shape{100000, 128});
  CHECK(knn.tensor("indices").shape == Shape{3, 8});

  const std::string dir = kRoot + "/workloads/";
  // The attention graphs split heads with Reshape constants [1, S, H, D].
  for (const char* name : {"bert-base.onnx", "bert-small.onnx", "gpt2.onnx"}) {
    CAPTURE(name);
    CHECK(error_of([&] { load(name, at(3)); }) ==
          dir + name +
              ": node 'attn.query.split' (Reshape): --batch 3: the shape's leading entry 1 fixes "
              "dim 0, which carries the batch (-1 there would follow it)");
  }
  // sort's keys are one rank-1 tensor: its only dim is the one sorted.
  CHECK(error_of([&] { load("sort.onnx", at(3)); }) ==
        dir +
            "sort.onnx: node 'topk' (TopK): --batch 3: it sorts along dim 0, which carries the "
            "batch");
  // kmeans' points are a matmul's B (the sums per centroid), its centroids too: no batch.
  CHECK(error_of([&] { load("kmeans.onnx", at(3)); }) ==
        dir +
            "kmeans.onnx: --batch 3: no input carries the batch (every graph input is a weight "
            "or has data)");
}

TEST_CASE("a YAML reshape whose shape fixes dim 0 refuses a batch") {
  const std::string text = R"(workload: w
inputs:
  x: {shape: [1, 4, 2, 2], dtype: f32}
layers:
  - {name: r, type: reshape, input: x, shape: [1, 16]}
  - {name: y, type: relu, input: r}
)";
  CHECK(yaml_error(text, 8) ==
        "w.yaml:5: layers[0].shape: layer 'r': --batch 8: the shape's leading entry 1 fixes dim "
        "0, which carries the batch (-1 there would follow it)");
  // Written with -1 it follows: [8, 16].
  std::string follows = text;
  follows.replace(follows.find("[1, 16]"), 7, "[-1, 16]");
  CHECK(compiler::parse_workload(follows, "w.yaml", at(8)).tensor("y").shape == Shape{8, 16});
  // The same workload as written is fine.
  CHECK(compiler::parse_workload(text, "w.yaml").tensor("y").shape == Shape{1, 16});
}

TEST_CASE("other YAML layers that would mix the samples refuse a batch") {
  const std::string head = R"(workload: w
inputs:
  x: {shape: [2, 6], dtype: f32}
layers:
)";
  CHECK(yaml_error(head + "  - {name: k, type: concat, inputs: [x, x], axis: 0}\n", 4) ==
        "w.yaml:5: layers[0].inputs: layer 'k': --batch 4: it concatenates along dim 0, which "
        "carries the batch");
  CHECK(yaml_error(head + "  - {name: t, type: transpose, input: x, perm: [1, 0]}\n", 4) ==
        "w.yaml:5: layers[0].perm: layer 't': --batch 4: it moves dim 0, which carries the batch, "
        "to dim 1");
  // b is an input too, so it carries the batch: a row b [2] added to every row of x cannot.
  CHECK(yaml_error(R"(workload: w
inputs:
  x: {shape: [2, 2], dtype: f32}
  b: {shape: [2], dtype: f32}
layers:
  - {name: s, type: add, inputs: [x, b]}
)",
                   4) ==
        "w.yaml:6: layers[0].inputs: layer 's': --batch 4: 'b' [2] carries the batch, but "
        "broadcasting it to rank 2 moves its dim 0");
  // Every YAML input carries the batch, so a matmul of two contracts it.
  CHECK(yaml_error(R"(workload: w
inputs:
  x: {shape: [2, 2], dtype: f32}
layers:
  - {name: m, type: matmul, inputs: [x, x]}
)",
                   4) ==
        "w.yaml:5: layers[0].inputs: layer 'm': --batch 4: it contracts dim 0 "
        "of 'x' [2,2], which carries the batch");
  // Rows of two samples each: at batch 4 the rows would pair other samples than at 2.
  CHECK(yaml_error(head + "  - {name: r, type: reshape, input: x, shape: [-1, 12]}\n", 4) ==
        "w.yaml:5: layers[0].shape: layer 'r': --batch 4: dim 0 of its output 'r' [1,12] is not "
        "a multiple of the batch 2: its rows would mix samples");
  CHECK(yaml_error(R"(workload: w
inputs:
  x: {shape: [2, 6], dtype: f32}
  y: {shape: [3, 6], dtype: f32}
layers:
  - {name: r, type: relu, input: x}
)",
                   4) ==
        "w.yaml:4: inputs.y.shape: --batch 4: input 'y' [3,6] and input 'x' [2,6] disagree on the "
        "batch (dim 0: 3 and 2)");
}

TEST_CASE("an ONNX Reshape whose constant shape fixes dim 0 refuses a batch") {
  const auto model = [](std::vector<int64_t> shape) {
    OnnxModelBuilder b;
    b.input("x", kFloat, {1, 3, 4}).output("y", kFloat, {});
    b.ints("shape", shape);
    b.node("Reshape", {"x", "shape"}, {"r"}, "split");
    b.node("Relu", {"r"}, {"y"}, "relu");
    return b;
  };
  CHECK(onnx_error(model({1, 12}), 8) ==
        "m.onnx: node 'split' (Reshape): --batch 8: the shape's leading entry 1 fixes dim 0, "
        "which carries the batch (-1 there would follow it)");
  // A leading 0 (copy) or -1 (infer) follows the batch.
  for (std::vector<int64_t> follows : {std::vector<int64_t>{0, 12}, {-1, 12}, {0, -1, 2}}) {
    CAPTURE(follows.size());
    const Workload w = compiler::import_onnx(model(follows).model(), "m.onnx", {}, at(8));
    CHECK(w.tensor("y").shape[0] == 8);
  }
}

TEST_CASE("an ONNX rank-0 input has no batch dim") {
  OnnxModelBuilder b;
  b.input("s", kFloat, {}).output("y", kFloat, {});
  b.node("Add", {"s", "s"}, {"y"}, "twice");
  // The builder leaves an input without dims shapeless: give it the empty shape of a scalar.
  onnx::ModelProto m = b.model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  CHECK(error_of([&] { compiler::import_onnx(m, "m.onnx", {}, at(8)); }) ==
        "m.onnx: --batch 8: input 's' is a scalar (rank 0): it has no leading dim to carry the "
        "batch");
  CHECK(compiler::import_onnx(m, "m.onnx").tensor("y").shape == Shape{});
  // A scalar operand broadcast over a tensor is a weight: the tensor takes the batch.
  OnnxModelBuilder scaled;
  scaled.input("x", kFloat, {2, 3}).input("s", kFloat, {}).output("y", kFloat, {});
  scaled.node("Mul", {"x", "s"}, {"y"}, "scale");
  m = scaled.model();
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  CHECK(compiler::import_onnx(m, "m.onnx", {}, at(8)).tensor("y").shape == Shape{8, 3});
}

TEST_CASE("ONNX nodes that pin the batch to a weight refuse it") {
  // x [2, 4] carries the batch; w is a weight (an initializer).
  const auto model = [](const std::string& op, std::vector<std::string> inputs,
                        std::vector<int64_t> wdims, const std::string& attr = "",
                        int64_t value = 0) {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 4}).output("y", kFloat, {});
    int64_t n = 1;
    for (int64_t d : wdims) n *= d;
    b.floats("w", wdims, std::vector<float>(static_cast<size_t>(n), 0.5f));
    onnx::NodeProto& node = b.node(op, inputs, {"y"}, "n");
    if (!attr.empty()) set_attr(node, attr, value);
    return b;
  };
  CHECK(onnx_error(model("Concat", {"x", "w"}, {3, 4}, "axis", 0), 8) ==
        "m.onnx: node 'n' (Concat): --batch 8: it concatenates along dim 0, which carries the "
        "batch");
  CHECK(onnx_error(model("Concat", {"x", "w"}, {2, 4}, "axis", 1), 8) ==
        "m.onnx: node 'n' (Concat): --batch 8: it concatenates 'w' [2,4], which does not carry "
        "the batch");
  CHECK(onnx_error(model("Add", {"x", "w"}, {2, 4}), 8) ==
        "m.onnx: node 'n' (Add): --batch 8: 'w' [2,4] does not carry the batch, but its dim 0 (2) "
        "meets the batch");
  // The product's rows are the weight's: W [3, 2] x h [2, 4], h = Relu(x) (x itself as a
  // matmul's B would be taken for a weight).
  const auto behind_relu = [&](const std::string& op, std::vector<int64_t> wdims,
                               const std::string& attr = "") {
    OnnxModelBuilder b = model(op, {"w", "h"}, wdims, attr, 1);
    b.node("Relu", {"x"}, {"h"}, "relu");
    // Relu first: nodes are imported in order.
    onnx::ModelProto m = b.model();
    m.mutable_graph()->mutable_node()->SwapElements(0, 1);
    return error_of([&] { compiler::import_onnx(m, "m.onnx", {}, at(8)); });
  };
  CHECK(behind_relu("MatMul", {3, 2}) ==
        "m.onnx: node 'n' (MatMul): --batch 8: it contracts dim 0 of 'h' [2,4], which carries "
        "the batch");
  CHECK(behind_relu("Gemm", {3, 4}, "transB") ==
        "m.onnx: node 'n' (Gemm): --batch 8: dim 0 of 'h' [2,4] (transB), which carries the "
        "batch, becomes dim 1 of the product");
  CHECK(onnx_error(model("Gemm", {"x", "w"}, {2, 3}, "transA", 1), 8) ==
        "m.onnx: node 'n' (Gemm): --batch 8: it contracts dim 0 of 'x' [2,4] (transA), which "
        "carries the batch");
  // Broadcast weights follow: a bias row, or a leading 1.
  CHECK(compiler::import_onnx(model("Add", {"x", "w"}, {1, 4}).model(), "m.onnx", {}, at(8))
            .tensor("y")
            .shape == Shape{8, 4});
  CHECK(compiler::import_onnx(model("MatMul", {"x", "w"}, {4, 3}).model(), "m.onnx", {}, at(8))
            .tensor("y")
            .shape == Shape{8, 3});
}

TEST_CASE("ONNX nodes that mix the samples refuse a batch") {
  const auto model = [](const std::string& op, const std::string& attr,
                        std::vector<int64_t> value) {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 4}).output("y", kFloat, {});
    onnx::NodeProto& node = b.node(op, {"x"}, {"y"}, "n");
    if (value.size() == 1)
      set_attr(node, attr, value[0]);
    else
      set_attr(node, attr, value);
    return b;
  };
  CHECK(onnx_error(model("Softmax", "axis", {0}), 8) ==
        "m.onnx: node 'n' (Softmax): --batch 8: it normalises over dim 0, which carries the batch");
  CHECK(onnx_error(model("ReduceMax", "axes", {0, 1}), 8) ==
        "m.onnx: node 'n' (ReduceMax): --batch 8: it reduces over dim 0, which carries the batch");
  CHECK(onnx_error(model("Flatten", "axis", {0}), 8) ==
        "m.onnx: node 'n' (Flatten): --batch 8: it flattens at axis 0, which moves the batch into "
        "dim 1");
  CHECK(onnx_error(model("Transpose", "perm", {1, 0}), 8) ==
        "m.onnx: node 'n' (Transpose): --batch 8: it moves dim 0, which carries the batch, to dim "
        "1");
}
