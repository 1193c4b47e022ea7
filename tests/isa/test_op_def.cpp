// The op definitions load, and a broken definition is rejected with a message naming file, line
// and op.
#include <doctest/doctest.h>

#include "isa/error.h"
#include "isa/op_def.h"

using namespace fracsim;
using namespace fracsim::isa;

TEST_CASE("the built-in ops load with their dims, operands and formulas") {
  const OpTable& t = OpTable::builtin();
  const OpDef& mm = t.get("matmul");
  CHECK(mm.opcode == 1);
  CHECK(mm.unit == UnitKind::matrix);
  REQUIRE(mm.dims.size() == 4);
  CHECK(mm.dim("K").kind == DimKind::reduce);
  CHECK(mm.dim("K").combine == "add");
  CHECK(mm.dim("K").accumulate_attr == "accumulate");
  CHECK(mm.operands[2].read_if == "accumulate");
  CHECK(mm.work.eval({{"B", 7}, {"M", 2}, {"N", 3}, {"K", 5}, {"accumulate", 0}}) == 420);
  CHECK(t.get("eltwise").attributes[0].values ==
        std::vector<std::string>{"add", "sub", "mul", "div", "max", "min", "pow", "mod", "fmod"});
  CHECK(t.get("activation").operands.size() == 2);
  CHECK(t.find(uint16_t{3})->name == "activation");
}

TEST_CASE("a formula gives the same value over names and over ids, every function included") {
  const Expr e =
      Expr::parse("cdiv(M, 3) * max(N, 2) + min(K, 4) - eq(K, 9) + clog2(M) / 2", "test");
  Vars vars;
  vars.set(var_id("M"), 10);
  vars.set(var_id("N"), 1);
  vars.set(var_id("K"), 9);
  // cdiv(10, 3) = 4, max(1, 2) = 2, min(9, 4) = 4, eq = 1, clog2(10) = 4: 8 + 4 - 1 + 2
  CHECK(e.eval(vars) == 13);
  CHECK(e.eval({{"M", 10}, {"N", 1}, {"K", 9}}) == 13);
  CHECK(var_id("M") == var_id(std::string("M")));
  CHECK(var_name(var_id("K")) == "K");
  vars.erase(var_id("N"));
  CHECK_THROWS_WITH_AS(e.eval(vars), "formula name 'N' unbound", InternalError);
}

TEST_CASE("a fused epilogue's bias and residual are read by the epilogue only") {
  const OpTable& t = OpTable::builtin();
  auto only = [&](const char* op, const char* operand) {
    const OpDef& d = t.get(op);
    return d.epilogue_only(static_cast<size_t>(d.operand_index(operand)));
  };
  CHECK(only("conv2d_bias_act", "bias"));
  CHECK(!only("conv2d_bias_act", "in"));
  CHECK(!only("conv2d_bias_act", "w"));
  CHECK(!only("conv2d_bias_act", "out"));  // read under `accumulate`, but an output
  CHECK(only("matmul_bias_add_act", "bias"));
  CHECK(only("matmul_bias_add_act", "res"));
  CHECK(!only("matmul_bias_add_act", "a"));
  CHECK(!only("matmul", "b"));        // a built-in op has no epilogue
  CHECK(!only("layernorm", "gamma"));  // an extension op without a `final` dim
}

namespace {
std::string load_error(const std::string& yaml) {
  OpTable t;
  try {
    t.add_yaml(yaml, "bad.yaml");
    t.validate();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}
const char* kHead = "op: f\nopcode: 9\nunit: vector\n";
}  // namespace

TEST_CASE("broken op definitions name file, line and op") {
  CHECK(load_error(std::string(kHead) +
                   "dims: {M: parallel}\noperands:\n  - {name: x, role: in, dims: [M, Q]}\n"
                   "dtypes: [[f32]]\nwork: M\ncycles: M\n") ==
        "bad.yaml:6: operands.dims: op f: operand x names dim 'Q' that is not declared under dims");
  CHECK(
      load_error(std::string(kHead) +
                 "dims: {M: parallel, Z: parallel}\noperands:\n  - {name: x, role: in, dims: [M]}\n"
                 "dtypes: [[f32]]\nwork: M\ncycles: M\n") ==
      "bad.yaml:4: dims: op f: dim Z is never bound by an operand");
  CHECK(load_error(std::string(kHead) +
                   "dims: {M: parallel}\noperands:\n  - {name: x, role: in, dims: [M]}\n"
                   "dtypes: [[f32]]\nwork: M*Q\ncycles: M\n") ==
        "bad.yaml:8: work: op f: formula names 'Q', neither a dim nor an attribute");
  CHECK(load_error(std::string(kHead) +
                   "dims: {M: parallel}\noperands:\n  - {name: x, role: in, dims: [M]}\n"
                   "dtypes: [[f32]]\nwork: M\ncycles: M\ncolour: red\n") ==
        "bad.yaml:10: colour: unknown key (expected one of: attributes, cycles, dims, dtypes, op, "
        "opcode, operands, reassociates, summary, unit, work)");
  CHECK(load_error(std::string(kHead) +
                   "dims: {M: {reduce: add}}\noperands:\n  - {name: x, role: out, dims: [M]}\n"
                   "dtypes: [[f32]]\nwork: M\ncycles: M\n") ==
        "bad.yaml:1: dims: op f: dim M reduces with 'add', which the LFU (eltwise fn) does not "
        "provide");
}
