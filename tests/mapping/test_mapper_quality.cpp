// Mapper quality (long): on 20 (layer, machine) cases, the search policy's decomposition at the
// top node is within 10% of the best the mapping oracle finds by simulation
// (sim/mapping_oracle.h). The spaces are too large to simulate whole, so each case simulates
// the choice's neighbourhood and 10 candidates drawn with seed 1, among tilings of at most 256
// pieces at the top node (`fracsim map ... --sample 10 --max-pieces 256` gives the same).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/workload.h"
#include "isa/encoding.h"
#include "sim/mapping_oracle.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

// `workload` is a file name in workloads/ without its extension (.yaml, else .onnx).
const isa::Program& program(const std::string& workload) {
  static std::map<std::string, isa::Program> compiled;
  auto it = compiled.find(workload);
  if (it != compiled.end()) return it->second;
  const std::string base = kRoot + "/workloads/" + workload;
  const compiler::Workload w = std::filesystem::exists(base + ".yaml")
                                   ? compiler::load_workload(base + ".yaml")
                                   : compiler::load_onnx(base + ".onnx");
  return compiled.emplace(workload, compiler::compile(w, isa::OpTable::builtin())).first->second;
}

struct Case {
  const char* what;
  const char* workload;
  const char* layer;  // the program instruction of this name (the first: a layer's only one)
  const char* machine;
};

// The index of the first instruction of `p` named `layer`; p.instructions.size() if none.
size_t instruction_named(const isa::Program& p, const std::string& layer) {
  for (size_t k = 0; k < p.instructions.size(); ++k)
    if (isa::instruction_name(p, k) == layer) return k;
  return p.instructions.size();
}

// The layers: resnet50's res2a_2b (3x3, 64 channels at 56x56), res2a_2c (1x1, 64 to 256),
// conv1 (7x7 stride 2) and fc (2048 to 1000); mobilenetv2's first depthwise 3x3 (32 channels
// at 112x112) and a stride-2 depthwise (96 channels, 112 to 56); bert-base's attention
// products (12 heads, 128 tokens: Q K^T and the weights times V).
const Case kCases[] = {
    {"conv 3x3", "resnet50", "res2a_2b", "f1"},
    {"conv 1x1", "resnet50", "res2a_2c", "f1"},
    {"depthwise", "mobilenetv2", "block1.dw", "f1"},
    {"strided conv", "resnet50", "conv1", "f1"},
    {"FC", "resnet50", "fc", "f1"},
    {"attention QK^T", "bert-base", "attn.scores", "f1"},
    {"conv 3x3", "resnet50", "res2a_2b", "f100"},
    {"conv 1x1", "resnet50", "res2a_2c", "f100"},
    {"depthwise", "mobilenetv2", "block1.dw", "f100"},
    {"strided depthwise", "mobilenetv2", "block2.dw", "f100"},
    {"attention AV", "bert-base", "attn.context", "f100"},
    {"conv 3x3", "resnet50", "res2a_2b", "scale/leaves-0016"},
    {"depthwise", "mobilenetv2", "block1.dw", "scale/leaves-0016"},
    {"strided conv", "resnet50", "conv1", "scale/leaves-0016"},
    {"FC", "resnet50", "fc", "scale/leaves-0016"},
    {"attention QK^T", "bert-base", "attn.scores", "scale/leaves-0016"},
    {"conv 1x1", "resnet50", "res2a_2c", "scale/leaves-0256"},
    {"strided conv", "resnet50", "conv1", "scale/leaves-0256"},
    {"FC", "resnet50", "fc", "scale/leaves-0256"},
    {"attention AV", "bert-base", "attn.context", "scale/leaves-0256"},
};

}  // namespace

TEST_CASE("mapper quality: the search's choice is within 10% of the oracle's best, 20 cases") {
  const isa::OpTable& ops = isa::OpTable::builtin();
  OracleOptions options;
  options.sample = 10;
  options.seed = 1;
  options.max_pieces = 256;
  std::string table;
  for (const Case& c : kCases) {
    const isa::Program& p = program(c.workload);
    const std::string machine = kRoot + "/configs/" + c.machine + ".yaml";
    const std::string what = c.what, workload = c.workload, on = c.machine;
    CAPTURE(what);
    CAPTURE(workload);
    const std::string layer = c.layer;
    CAPTURE(layer);
    CAPTURE(on);
    const size_t k = instruction_named(p, layer);
    REQUIRE(k < p.instructions.size());
    const OracleResult r = map_instruction(load_machine_spec(machine), ops, p, k, options);
    // The cost model's estimates of the choice and of the best candidate, against their cycles.
    const double best_estimate = !r.rows.empty() && r.rows.front().cycles < r.chosen_cycles
                                     ? r.rows.front().estimate
                                     : r.chosen_estimate;
    table += fmt::format(
        "{:<18} {:<12} {:>4} {:<18} {:>8} {:>8} {:>8} {:>5} {:>4} {:>7.2f}% {:>+7.1f}% "
        "{:>+7.1f}%\n",
        c.what, c.workload, k, c.machine, r.chosen_cycles, r.chosen_pinned_cycles, r.best, r.rank,
        r.rows.size(), 100 * r.gap,
        100 * (r.chosen_estimate / static_cast<double>(r.chosen_cycles) - 1),
        100 * (best_estimate / static_cast<double>(r.best) - 1));
    CHECK(r.chosen_in_space);
    // The choice pinned need not give the plain run's cycles here: a pin gives every piece the
    // first piece's partition, where the policy decides per piece shape (edge pieces).
    CHECK(r.gap <= 0.10);
  }
  MESSAGE(
      "case               workload    instr machine              chosen   pinned     best  rank"
      "   of      gap est chosen est best\n"
      << table);
}
