// Verilator coverage of the leaf units (`fracsim verify --coverage`): the builds instrumented
// with --coverage (rtl/CMakeLists.txt, FRACSIM_RTL_COVERAGE), writing their counts, and the
// summary of a coverage data file by kind of point (line, toggle, branch, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fracsim::rtl {

// The coverage-instrumented builds of this binary: "" / 0 when there are none.
std::string covered_matrix_size();  // "RxC"
int covered_vector_lanes();
int covered_sort_width();

// Writes the points of `top`'s context (a model built with --coverage) to `path`. Include
// verilated_cov.h before instantiating it.
template <typename V>
bool write_model_coverage(V& top, const std::string& path) {
  top.contextp()->coveragep()->write(path.c_str());
  return true;
}

// Drops the points of `top`'s context before the model that counts them goes away, so that a
// later write never reads a destroyed model's counters.
template <typename V>
void forget_model_coverage(V& top) {
  top.contextp()->coveragep()->clear();
}

struct CoverageCount {
  std::string kind;  // the page's kind: line, toggle, branch, expr, user
  uint64_t covered = 0, total = 0;
};

// Points hit at least once, and all points, per kind (line, branch, toggle, then any other in
// order of first appearance), read from a verilator_coverage data file; throws ConfigError when
// it cannot be read.
std::vector<CoverageCount> summarize_coverage(const std::string& path);

}  // namespace fracsim::rtl
