// `fracsim map` as a user runs it: its help, bad flags and the instruction range, exit 2 with
// the exact messages.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/cli_runner.h"

using fracsim::testing::CliResult;
using fracsim::testing::run_fracsim;

TEST_CASE("map --help prints the synopsis and the oracle's options, exit 0") {
  const CliResult r = run_fracsim("map --help");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("usage: fracsim map -m CONFIG -w PROGRAM --instruction K [--sample N] "
                    "[--seed S] [options]\n",
                    0) == 0);
  for (const char* line : {
           "  -m [ --machine ] arg  machine config (.yaml)\n",
           "  --instruction arg     K: the program's instruction K, counted from 0\n",
           "  --seed arg (=1)       S: the seed of --sample's draws\n",
           "  --max-pieces arg      P: only tilings of at most P pieces at the top node "
           "(default 65536; 0: \n"
           "                        every tiling): a candidate's simulation time and memory "
           "grow with its \n",
           "  -h [ --help ]         print this help\n",
       }) {
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(run_fracsim("help map").out == r.out);
  CHECK(run_fracsim("help").out.find("  map            the mapping oracle: simulate the top "
                                     "node's decomposition candidates for one instruction and "
                                     "rank the policy's choice\n") != std::string::npos);
}

TEST_CASE("map: bad flags and an instruction out of range exit 2 naming the flag") {
  CliResult r =
      run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --frob");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim map: unrecognised option '--frob' (see 'fracsim map --help')\n");
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: fracsim map: the option '--instruction' is required but missing (see 'fracsim "
        "map --help')\n");
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction x1");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim map: --instruction: expected a whole number, got 'x1'\n");
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --sample 0");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim map: --sample: expected a whole number of at least 1, got '0'\n");
  r = run_fracsim(
      "map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --sample 2 --candidate M=8");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: fracsim map: --sample and --candidate: give one (a sample of the space, or the "
        "candidates to simulate)\n");
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --candidate Q=1");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: fracsim map: --candidate 'Q=1': no dim 'Q' among matmul_bias_act's splittable "
        "dims (B M N K)\n");
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 99");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: fracsim map: --instruction 99: program mlp has 3 instructions (counted from "
        "0)\n");
}

TEST_CASE("map: tilings of more than 65536 pieces are left out unless --max-pieces says so") {
  // Without a limit the whole space of a network's layer holds tilings of millions of pieces,
  // whose simulations would exhaust the host's memory.
  const std::string cmd = "map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 ";
  const std::string limited = "  limited to    tilings of at most 65536 pieces\n";
  CliResult r = run_fracsim(cmd + "--sample 2");
  REQUIRE(r.code == 0);
  CHECK(r.out.find(limited) != std::string::npos);
  r = run_fracsim(cmd + "--sample 2 --max-pieces 0");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("  limited to") == std::string::npos);
  r = run_fracsim(cmd + "--sample 2 --max-pieces 4");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("  limited to    tilings of at most 4 pieces\n") != std::string::npos);
  // Candidates given are simulated as given: no limit stated.
  r = run_fracsim(cmd + "--candidate 'N=128 K=131'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("  space         the 1 candidates given (--candidate)\n  simulated") !=
        std::string::npos);
  r = run_fracsim(cmd + "--max-pieces -1");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim map: --max-pieces: expected a whole number, got '-1'\n");
}

TEST_CASE("map --trace writes the plain run's timeline and one per simulated candidate") {
  const std::string dir = fracsim::testing::temp_dir("fracsim-map");
  const std::string into = dir + "/timelines";  // made by the command
  CliResult r = run_fracsim(
      "map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 "
      "--sample 2 --trace " +
      into);
  REQUIRE(r.code == 0);
  const std::string last = "  timelines     in " + into + "\n";
  REQUIRE(r.out.size() > last.size());
  CHECK(r.out.substr(r.out.size() - last.size()) == last);
  // "  simulated     N (timing mode, ...": N candidates, each its own file, and chosen.json.
  const size_t at = r.out.find("  simulated     ");
  REQUIRE(at != std::string::npos);
  const size_t simulated = std::stoul(r.out.substr(at + 16));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(into)) {
    CHECK(e.path().extension() == ".json");
    ++files;
  }
  CHECK(simulated > 0);
  CHECK(files == simulated + 1);
  CHECK(std::filesystem::file_size(into + "/chosen.json") > 0);
  // A file where the folder should be: exit 2, before anything is simulated.
  const std::string file = dir + "/a-file";
  { std::ofstream(file) << "kept\n"; }
  r = run_fracsim("map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --trace " + file);
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + file + ": cannot create directory (Not a directory)\n");
  std::ifstream in(file);
  std::string kept;
  std::getline(in, kept);
  CHECK(kept == "kept");
}

TEST_CASE("map --batch compiles the workload at that batch, as run does") {
  // The MLP is written at batch 64; fc1's input a is [1, M, 784] with M the batch.
  const std::string cmd =
      "map -m configs/tiny.yaml -w workloads/mlp.yaml --instruction 0 --sample 1";
  CliResult r = run_fracsim(cmd);
  REQUIRE(r.code == 0);
  CHECK(r.out.find(" a=f32@0x0[1,64,784:0,784,1] ") != std::string::npos);
  r = run_fracsim(cmd + " --batch 4");
  REQUIRE(r.code == 0);
  CHECK(r.out.find(" a=f32@0x0[1,4,784:0,784,1] ") != std::string::npos);
  r = run_fracsim(cmd + " --batch 0");
  CHECK(r.code == 2);
  CHECK(r.out == "error: fracsim map: --batch: expected a positive integer, got '0'\n");
}
