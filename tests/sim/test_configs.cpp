// Every shipped config (configs/, recursively) loads; every energy table is used by one; the scale
// series is one design at 1 to 4096 leaves; and the MLP runs in timing mode on every config of up
// to 256 leaves, with every matrix op of the program accounted for and its energy priced.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "sim/energy.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {
namespace {

namespace fs = std::filesystem;

const fs::path kConfigs = fs::path(FRACSIM_SOURCE_DIR) / "configs";
const fs::path kTables = kConfigs / "energy";
const fs::path kSweeps = kConfigs / "sweeps";  // sweep specs, run by the README's test

// Machine configs: every .yaml under configs/ but the energy tables and sweep specs, sorted.
std::vector<fs::path> machine_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(kConfigs)) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    if (e.path().parent_path() == kTables || e.path().parent_path() == kSweeps) continue;
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const isa::Program& mlp() {
  static const isa::Program p = compiler::compile(
      compiler::load_workload(std::string(FRACSIM_SOURCE_DIR) + "/workloads/mlp.yaml"),
      isa::OpTable::builtin());
  return p;
}

TEST_CASE("every machine config loads, with an energy table, and every table is used") {
  const std::vector<fs::path> configs = machine_configs();
  CHECK(configs.size() == 10);  // tiny, f1, f100 and the 7 of the scale series
  std::set<fs::path> used;
  for (const fs::path& path : configs) {
    CAPTURE(path);
    const MachineSpec m = load_machine_spec(path.string());
    REQUIRE(m.energy.has_value());
    if (m.energy->source != "inline")
      used.insert(fs::weakly_canonical(path.parent_path() / m.energy->source));
  }
  for (const auto& e : fs::directory_iterator(kTables)) {
    CAPTURE(e.path());
    CHECK(used.count(fs::weakly_canonical(e.path())) == 1);
  }
}

TEST_CASE("the scale series: 1 to 4096 leaves, one design") {
  const std::vector<int64_t> sizes{1, 4, 16, 64, 256, 1024, 4096};
  const std::vector<std::string> tiers{"server", "board", "module", "chip", "cluster", "core"};
  std::vector<MachineSpec> series;
  for (int64_t n : sizes) {
    CAPTURE(n);
    char name[32];
    std::snprintf(name, sizeof name, "leaves-%04lld.yaml", static_cast<long long>(n));
    series.push_back(load_machine_spec((kConfigs / "scale" / name).string()));
    const MachineSpec& m = series.back();
    CHECK(m.leaves() == n);
    // 4^d leaves: d levels of fan-out 4 (the single core: one level of fan-out 1), named by
    // their tier from the leaf up.
    const size_t depth = n == 1 ? 1 : static_cast<size_t>(std::log2(n) / 2);
    REQUIRE(m.levels.size() == depth);
    for (size_t l = 0; l < depth; ++l) {
      CHECK(m.levels[l].name == tiers[tiers.size() - depth + l]);
      CHECK(m.levels[l].fanout == (n == 1 ? 1 : 4));
    }
  }
  // Same root, same table, and each tier with the same parameters in every machine it is in.
  const MachineSpec& big = series.back();
  for (const MachineSpec& m : series) {
    CAPTURE(m.name);
    CHECK(m.effective["root"] == big.effective["root"]);
    CHECK(m.effective["energy"]["table"] == big.effective["energy"]["table"]);
    for (size_t l = 0; l < m.levels.size(); ++l) {
      const size_t in_big = big.levels.size() - m.levels.size() + l;
      auto a = m.effective["levels"][l], b = big.effective["levels"][in_big];
      a.erase("fanout");
      b.erase("fanout");
      CHECK(a == b);
    }
  }
}

TEST_CASE("the MLP runs in timing mode on every config of up to 256 leaves") {
  // 2 x (64x784x1024 + 64x1024x1024 + 64x1024x10) MACs: every leaf piece does a share of its
  // instruction's work, so the leaves' matrix ops add up to the program's exactly.
  const uint64_t mlp_matrix_ops = 2ULL * 64 * (784 * 1024 + 1024 * 1024 + 1024 * 10);
  int ran = 0;
  for (const fs::path& path : machine_configs()) {
    const MachineSpec m = load_machine_spec(path.string());
    if (m.leaves() > 256) continue;
    CAPTURE(path);
    const RunResult r = simulate(m, isa::OpTable::builtin(), mlp(), Mode::timing);
    CHECK(r.cycles > 0);
    uint64_t matrix_ops = 0;
    for (const NodeReport& n : r.nodes) matrix_ops += n.stats[Counter::matrix_ops];
    CHECK(matrix_ops == mlp_matrix_ops);
    const EnergyReport e = run_energy(m, r);
    CHECK(e.configured);
    CHECK(e.by_component[static_cast<size_t>(EnergyComponent::matrix_unit)] ==
          static_cast<double>(mlp_matrix_ops / 2) *
              static_cast<double>(m.energy->unit_action[static_cast<size_t>(isa::UnitKind::matrix)]
                                                       [static_cast<size_t>(isa::DType::f32)]));
    CHECK(e.total > e.dynamic());
    ++ran;
  }
  CHECK(ran == 8);  // tiny, f1, f100 and scale 1 to 256
}

}  // namespace
}  // namespace fracsim::sim
