// A functional run's check of each instruction (sim/instruction_check.h), fed by hand with what
// "the machine" computed, so that every verdict is derived by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "isa/assembly.h"
#include "isa/reference.h"
#include "sim/instruction_check.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/report.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

// y = a . b over K = 3, a = [1, 2^-24, 2^-24], b = [1, 1, 1]; z = y + 0.5. The reference sums in
// index order in f32: (1 + 2^-24) rounds to 1 (a tie, to even), and again: y = 1. Summed the
// other way, 2^-24 + 2^-24 = 2^-23 first, y = 1 + 2^-23: one ulp more, a reassociation. Its
// bound (isa/reassociation.h): 2 R 2^-24 S with R = 3 and S = 1 (the sum of the terms'
// magnitudes, rounded as the reference sums), 3 * 2^-23: three ulps of 1.
const isa::Program& program() {
  static const isa::Program p = isa::assemble(
      ".program check\n"
      ".footprint 64\n"
      ".symbol output z f32@0x28[1,1,1,1,1,1:1,1,1,1,1,1]\n"
      ".data bytes 0x0 f32 3 0000803f0000803300008033\n"
      ".data bytes 0x10 f32 3 0000803f0000803f0000803f\n"
      ".data bytes 0x24 f32 1 0000003f\n"
      "matmul a=f32@0x0[1,1,3:0,3,1] b=f32@0x10[1,3,1:0,1,1] out=f32@0x20[1,1,1:0,1,1] "
      "accumulate=0\n"
      "eltwise a=f32@0x20[1,1,1,1,1,1:1,1,1,1,1,1] b=f32@0x24[1,1,1,1,1,1:1,1,1,1,1,1] "
      "out=f32@0x28[1,1,1,1,1,1:1,1,1,1,1,1] fn=add\n",
      "check.fasm", isa::OpTable::builtin());
  return p;
}

// The main memory as the machine leaves it after both instructions: y and z as given.
std::vector<uint8_t> machine_memory(float y, float z) {
  std::vector<uint8_t> m(64, 0);
  isa::MemoryView v{m.data(), m.size()};
  for (const isa::DataSegment& seg : program().data) isa::fill_data_segment(seg, v);
  std::memcpy(&m[0x20], &y, 4);
  std::memcpy(&m[0x28], &z, 4);
  return m;
}

InstructionCheck check(float y, float z) {
  InstructionChecker checker(program(), isa::OpTable::builtin());
  std::vector<uint8_t> m = machine_memory(y, z);
  for (size_t k = 0; k < 2; ++k) checker.retired(k, isa::MemoryView{m.data(), m.size()});
  return checker.result();
}

const float kUlp = std::ldexp(1.0f, -23);  // of 1

}  // namespace

TEST_CASE("each instruction is checked against the reference op on the machine's inputs") {
  SUBCASE("the reference's own results: both bit for bit") {
    const InstructionCheck c = check(1.0f, 1.5f);
    CHECK(c.instructions == 2);
    CHECK(c.bit_exact == 2);
    CHECK(c.within_bound == 0);
    CHECK(c.holds());
  }
  SUBCASE(
      "the sum taken in the other order: the matmul within its bound; the add, fed the "
      "machine's y, bit for bit where the whole program's reference would differ") {
    const InstructionCheck c = check(1.0f + kUlp, 1.5f + kUlp);
    CHECK(c.bit_exact == 1);
    CHECK(c.within_bound == 1);
    CHECK(c.holds());
    // Named among the reassociated, one ulp of its three: a third of its bound.
    REQUIRE(c.reassociated.size() == 1);
    CHECK(c.reassociated[0].index == 0);
    CHECK(c.reassociated[0].name == "#0");
    CHECK(c.reassociated[0].op == "matmul");
    CHECK(c.reassociated[0].elements == 1);
    CHECK(c.reassociated[0].differing == 1);
    CHECK(c.reassociated[0].beyond == 0);
    CHECK(c.reassociated[0].max_abs_diff == std::ldexp(1.0, -23));
    CHECK(c.reassociated[0].bound_used == 1.0 / 3);
  }
  SUBCASE("three ulps off is the bound itself: within") {
    const InstructionCheck c = check(1.0f + 3 * kUlp, 1.5f + 3 * kUlp);
    CHECK(c.within_bound == 1);
    CHECK(c.holds());
    REQUIRE(c.reassociated.size() == 1);
    CHECK(c.reassociated[0].bound_used == 1.0);
  }
  SUBCASE("four ulps off: the matmul fails, named with its difference") {
    const InstructionCheck c = check(1.0f + 4 * kUlp, 1.5f + 4 * kUlp);
    CHECK(c.bit_exact == 1);
    CHECK(c.within_bound == 0);
    REQUIRE(c.failures.size() == 1);
    CHECK(c.failures[0].index == 0);
    CHECK(c.failures[0].name == "#0");
    CHECK(c.failures[0].op == "matmul");
    CHECK(c.failures[0].elements == 1);
    CHECK(c.failures[0].differing == 1);
    CHECK(c.failures[0].beyond == 1);
    CHECK(c.failures[0].max_abs_diff == std::ldexp(1.0, -21));
    CHECK_FALSE(c.holds());
  }
  SUBCASE("an element-wise add one ulp off fails: it sums nothing a decomposition reorders") {
    const InstructionCheck c = check(1.0f, 1.5f + kUlp);
    CHECK(c.bit_exact == 1);
    REQUIRE(c.failures.size() == 1);
    CHECK(c.failures[0].index == 1);
    CHECK(c.failures[0].op == "eltwise");
    CHECK(c.failures[0].max_abs_diff == std::ldexp(1.0, -23));
    CHECK(c.reassociated.empty());
  }
}

TEST_CASE("a functional run feeds the check every instruction in order, and names a failure") {
  const MachineSpec spec =
      load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/tiny.yaml");
  InstructionChecker checker(program(), isa::OpTable::builtin());
  std::vector<size_t> order;
  SimOptions options;
  options.retired = [&](size_t k, isa::MemoryView memory) {
    order.push_back(k);
    checker.retired(k, memory);
  };
  const RunResult run =
      simulate(spec, isa::OpTable::builtin(), program(), Mode::functional, options);
  CHECK(order == std::vector<size_t>{0, 1});
  CHECK(checker.result().bit_exact == 2);
  CHECK(checker.result().holds());
  // The summary of a run whose matmul was four ulps off (as above).
  FunctionalCheck failed;
  failed.instructions = check(1.0f + 4 * kUlp, 1.5f + 4 * kUlp);
  CHECK_FALSE(failed.holds());
  const std::string text = summary_text(spec, program(), run, failed);
  CHECK(text.find("  instructions  MISMATCH: 1 of 2 differ from the reference op on the "
                  "machine's inputs\n"
                  "    instruction 0 #0 (matmul): 1 of 1 elements beyond its check (max abs "
                  "diff 4.76837e-07)\n") != std::string::npos);
  // One ulp off: the matmul named among those within the bound, with its share of the bound.
  FunctionalCheck reordered;
  reordered.instructions = check(1.0f + kUlp, 1.5f + kUlp);
  CHECK(summary_text(spec, program(), run, reordered)
            .find("  instructions  all 2 match the reference op on the machine's inputs (1 bit "
                  "for bit, 1 within the reassociation bound)\n"
                  "    instruction 0 #0 (matmul): 1 of 1 elements reassociated, within the bound "
                  "(max abs diff 1.19209e-07, 33.3% of the bound at most)\n") != std::string::npos);
  // stats.json lists both kinds, each instruction with its figures.
  const nlohmann::ordered_json j = stats_json(spec, program(), run, failed)["instructions"];
  CHECK(j.dump() ==
        R"({"checked":2,"bit_exact":1,"within_bound":0,"reassociated":[],"failing":[{"index":0,)"
        R"("name":"#0","op":"matmul","elements":1,"differing":1,"beyond_bound":1,)"
        R"("max_abs_diff":4.76837158203125e-07}]})");
  CHECK(stats_json(spec, program(), run, reordered)["instructions"]["reassociated"].dump() ==
        R"([{"index":0,"name":"#0","op":"matmul","elements":1,"differing":1,)"
        R"("max_abs_diff":1.1920928955078125e-07,"bound_used":0.3333333333333333}])");
}

TEST_CASE("a cancelling sum is bounded by its terms' magnitudes, not by its result") {
  // y = [1, 1] . [1, -1] = 0: the reference's |y| bounds nothing, the op on absolute values
  // gives S = 2, so the bound is 2 R 2^-24 S = 2 * 2 * 2^-24 * 2 = 2^-21.
  const isa::Program p = isa::assemble(
      ".program cancel\n"
      ".footprint 64\n"
      ".symbol output y f32@0x20[1,1,1:1,1,1]\n"
      ".data bytes 0x0 f32 2 0000803f0000803f\n"
      ".data bytes 0x10 f32 2 0000803f000080bf\n"
      "matmul a=f32@0x0[1,1,2:0,2,1] b=f32@0x10[1,2,1:0,1,1] out=f32@0x20[1,1,1:0,1,1] "
      "accumulate=0\n",
      "cancel.fasm", isa::OpTable::builtin());
  auto check_y = [&](float y) {
    InstructionChecker checker(p, isa::OpTable::builtin());
    std::vector<uint8_t> m(64, 0);
    isa::MemoryView v{m.data(), m.size()};
    for (const isa::DataSegment& seg : p.data) isa::fill_data_segment(seg, v);
    std::memcpy(&m[0x20], &y, 4);
    checker.retired(0, v);
    return checker.result();
  };
  CHECK(check_y(0.0f).bit_exact == 1);
  CHECK(check_y(std::ldexp(1.0f, -21)).within_bound == 1);
  const InstructionCheck beyond = check_y(std::ldexp(1.0f, -20));
  REQUIRE(beyond.failures.size() == 1);
  CHECK(beyond.failures[0].max_abs_diff == std::ldexp(1.0, -20));
}
