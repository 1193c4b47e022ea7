// fracsim_rtl_speed: co-simulation speed of each Verilated matrix unit on one long job, without
// the per-vector setup of `fracsim verify` (operand gather, reference, write-back). For every
// size built it runs a job of `blocks` blocks of K beats (random int8 operands, no back-pressure)
// through MatrixBridge::run `reps` times and prints one line per size:
//   matrix RxC cycles C seconds S mcycles_per_s X
// (the best rep's rate: the host's least disturbed run). scripts/bench reads it.
//   fracsim_rtl_speed [K [blocks [reps]]]      defaults 512 100 3
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "rtl/matrix_bridge.h"
#include "rtl/matrix_unit_port.h"

// libsystemc, which fracsim_sim links, calls sc_main from its main(); this program's own main
// runs instead, so this is never called. (An optimised build drops libsystemc as unneeded; a
// sanitized build keeps references into it, and the link then needs sc_main.)
extern "C" int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
  using namespace fracsim::rtl;
  const int64_t K = argc > 1 ? std::atoll(argv[1]) : 512;
  const int64_t blocks = argc > 2 ? std::atoll(argv[2]) : 100;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  if (K < 1 || blocks < 1 || reps < 1) {
    std::fprintf(stderr, "usage: fracsim_rtl_speed [K >= 1 [blocks >= 1 [reps >= 1]]]\n");
    return 2;
  }
  for (const std::string& s : built_matrix_sizes()) {
    const int rows = std::stoi(s.substr(0, s.find('x')));
    const int cols = std::stoi(s.substr(s.find('x') + 1));
    MatrixBridge bridge(make_matrix_unit(rows, cols));
    // One batch of `blocks` row blocks, one column block: M = blocks * rows, N = cols.
    MatmulJob job;
    job.B = 1;
    job.M = blocks * rows;
    job.K = K;
    job.N = cols;
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> d(-128, 127);
    std::vector<int16_t> a(static_cast<size_t>(job.M * K)), b(static_cast<size_t>(K * job.N));
    for (auto& x : a) x = static_cast<int16_t>(d(rng));
    for (auto& x : b) x = static_cast<int16_t>(d(rng));
    job.a = a.data();
    job.b = b.data();
    double best = 0;
    uint64_t cycles = 0;
    double seconds = 0;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const MatmulResult r = bridge.run(job);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = t > 0 ? static_cast<double>(r.cycles) / t : 0;
      if (rate > best) {
        best = rate;
        cycles = r.cycles;
        seconds = t;
      }
    }
    std::printf("matrix %s cycles %llu seconds %.6f mcycles_per_s %.3f\n", s.c_str(),
                static_cast<unsigned long long>(cycles), seconds, best / 1e6);
  }
  return 0;
}
