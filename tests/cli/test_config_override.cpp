// --set KEY=VALUE on `fracsim run` and `fracsim config check`: the override reaches the parser as
// if the file gave it, and every mistake names the --set.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"

namespace {

using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;

std::string check(const std::string& set) {
  return "config check configs/tiny.yaml --set '" + set + "'";
}

// The message of a failed `config check` with one --set, which must exit 2.
std::string error_of(const std::string& set) {
  CliResult r = run_fracsim(check(set));
  CHECK(r.code == 2);
  return r.out;
}

}  // namespace

TEST_CASE("config check --set: a level by index or by name, values with their units") {
  CliResult r =
      run_fracsim(check("levels[1].fanout=8") + " --set 'levels.core.memory.capacity=256 KiB'");
  CHECK(r.code == 0);
  CHECK(r.out ==
        "configs/tiny.yaml: machine tiny: 2 levels below the root, 16 leaves\n"
        "  root   memory 64 MiB at 32 GB/s\n"
        "  cluster x2    (2 nodes) memory 512 KiB, link 32 GB/s\n"
        "  core   x8    (16 nodes) memory 256 KiB, link 16 GB/s, matrix 4x4, vector 8 lanes\n");
  // The later --set of the same key wins; a key the file leaves to its default can be set.
  r = run_fracsim(check("levels.core.fanout=3") +
                  " --set 'levels[1].fanout=1' --set "
                  "'levels.core.leaf.sort.width=16' --set 'levels[1].memory={capacity: 32 KiB, "
                  "bandwidth: 8 GB/s}'");
  CHECK(r.code == 0);
  CHECK(r.out.find("2 leaves") != std::string::npos);
  CHECK(r.out.find("core   x1    (2 nodes) memory 32 KiB") != std::string::npos);
}

TEST_CASE("config check --set: bad keys and values are the parser's errors, naming the --set") {
  const std::string f = "error: configs/tiny.yaml: --set ";
  CHECK(error_of("levels.core.fanout=0") ==
        f + "levels.core.fanout=0: levels[1].fanout: must be at least 1, got 0\n");
  CHECK(error_of("levels[1].fanot=3") ==
        f + "levels[1].fanot=3: levels[1].fanot: unknown key (expected one of: clock, "
            "decode_cycles, fanout, hold_partial_sums, keep_outputs, leaf, link, memory, "
            "name, overlap, pipeline_depth, prefetch, resident_partial_sums)\n");
  CHECK(error_of("decomposer=greedy") ==
        f + "decomposer=greedy: decomposer: unknown decomposer 'greedy' (expected halving or "
            "search)\n");
  CHECK(error_of("root.memroy.capacity=1 KiB") ==
        f + "root.memroy.capacity=1 KiB: root.memroy: unknown key (expected one of: clock, "
            "decode_cycles, lfu_throughput, memory, pipeline_depth)\n");
  CHECK(error_of("levels[1].memory.capacity=12 parsecs") ==
        f + "levels[1].memory.capacity=12 parsecs: levels[1].memory.capacity: expected a size "
            "such as '512 KiB', got '12 parsecs'\n");
  CHECK(error_of("levels[1].memory={capacity: 1 KiB}") ==
        f + "levels[1].memory={capacity: 1 KiB}: levels[1].memory.bandwidth: missing required "
            "key\n");
  CHECK(error_of("root.clock=3 GHz") ==
        f + "root.clock=3 GHz: root.clock: 3 GHz gives a period of 333.333 ps; fracsim needs a "
            "whole number of picoseconds\n");
  // An error at another key says which overrides were in effect.
  CHECK(error_of("levels[0].name=core") ==
        "error: configs/tiny.yaml:45: levels[1].name: duplicate level name 'core' (levels[0] has "
        "it too) (with --set levels[0].name=core)\n");
  // Paths that lead nowhere, and what is not KEY=VALUE.
  CHECK(error_of("levels.coer.fanout=2") ==
        f + "levels.coer.fanout=2: levels: no entry named 'coer' (entries: cluster, core; or "
            "levels[i])\n");
  CHECK(error_of("levels[5].fanout=2") ==
        f + "levels[5].fanout=2: levels[5]: no such entry (levels has 2: cluster, core)\n");
  CHECK(error_of("levels[1].fanout.x=2") ==
        f + "levels[1].fanout.x=2: levels[1].fanout: is a value ('2'), not a mapping\n");
  CHECK(error_of("root[0].clock=1 GHz") == f + "root[0].clock=1 GHz: root: is not a list\n");
  CHECK(error_of("levels[x].fanout=2") ==
        f + "levels[x].fanout=2: bad key path 'levels[x].fanout': expected an index in [], got "
            "'x'\n");
  CHECK(error_of("levels..fanout=2") ==
        f + "levels..fanout=2: bad key path 'levels..fanout': empty key\n");
  CHECK(error_of("levels[1].memory.capacity=[1") ==
        f + "levels[1].memory.capacity=[1: the value is not YAML: end of sequence flow not "
            "found\n");
  CHECK(error_of("fanout") == "error: --set fanout: expected KEY=VALUE, e.g. levels[0].fanout=8\n");
  CHECK(error_of("fanout=") ==
        "error: --set fanout=: expected KEY=VALUE, e.g. levels[0].fanout=8\n");
  // An error elsewhere in the file is still the file's own, at its line.
  const std::string dir = fracsim::testing::temp_dir("fracsim-set");
  std::ofstream(dir + "/m.yaml") << "machine: m\nroot: {clock: 1 GHz}\nlevels: []\n";
  CliResult r = run_fracsim("config check " + dir + "/m.yaml --set root.clock=2GHz");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir +
                     "/m.yaml:2: root.lfu_throughput: missing required key (with --set "
                     "root.clock=2GHz)\n");
}

TEST_CASE("config check --set: the path follows the declared keys, where the file has none too") {
  const std::string f = "error: configs/tiny.yaml: --set ";
  // tiny gives no per-dtype MAC arrays and no clock on its core level.
  CHECK(error_of("levels.core.leaf.matrix.f64.rows=2") ==
        f + "levels.core.leaf.matrix.f64.rows=2: levels[1].leaf.matrix.f64: unknown key "
            "(expected one of: cols, f32, i16, i8, rows)\n");
  CHECK(error_of("levels.core.clock.x=1") ==
        f + "levels.core.clock.x=1: levels[1].clock: is a value (a quantity), not a mapping\n");
  CHECK(run_fracsim(check("levels.core.leaf.matrix.i8.rows=8")).code == 0);
  // The keys a level above the leaf takes: lfu_throughput, not leaf.
  CHECK(error_of("levels[0].colour=1") ==
        f + "levels[0].colour=1: levels[0].colour: unknown key (expected one of: clock, "
            "decode_cycles, fanout, hold_partial_sums, keep_outputs, lfu_throughput, link, "
            "memory, name, overlap, pipeline_depth, prefetch, resident_partial_sums)\n");
  // Energy levels are entries by name; an entry's keys are declared.
  CHECK(run_fracsim(check("energy.levels.core.dma_per_byte=2 pJ")).code == 0);
  CHECK(error_of("energy.levels.core.dma=2 pJ") ==
        f + "energy.levels.core.dma=2 pJ: energy.levels.core.dma: unknown key (expected one of: "
            "dma_per_byte, leakage, memory)\n");
  CHECK(error_of("energy.mac.f64=1 pJ") ==
        f + "energy.mac.f64=1 pJ: energy.mac.f64: unknown key (expected one of: f32, i16, i8)\n");
}

TEST_CASE("run --set: the run takes the override and stats.json records it") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-set");
  CliResult r = run_fracsim(
      "run -m configs/tiny.yaml -w workloads/mlp.yaml --set levels.core.fanout=4 --set "
      "'levels[0].memory.capacity=1 MiB' --out " +
      dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("fracsim: mlp on tiny (2 levels, 8 leaves), timing mode") == 0);
  std::ifstream in(dir + "/stats.json");
  const nlohmann::json stats = nlohmann::json::parse(in);
  CHECK(stats["machine"]["leaves"] == 8);
  CHECK(stats["config"]["levels"][1]["fanout"] == 4);
  CHECK(stats["config"]["levels"][0]["memory"]["capacity"] == "1 MiB");
  CHECK(stats["config"]["overrides"] ==
        nlohmann::json::array({"levels.core.fanout=4", "levels[0].memory.capacity=1 MiB"}));
  // Without --set the effective config has no overrides.
  r = run_fracsim("run -m configs/tiny.yaml -w workloads/mlp.yaml --out " + dir);
  REQUIRE(r.code == 0);
  std::ifstream again(dir + "/stats.json");
  CHECK_FALSE(nlohmann::json::parse(again)["config"].contains("overrides"));
}
