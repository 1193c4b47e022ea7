#include "rtl/unit_coverage.h"

#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::rtl {

// A data file holds one line per point: C '<\001key\002value ...>' count. The point's kind is
// the prefix of its page (v_line/matrix_unit, v_toggle/matrix_unit, ...).
std::vector<CoverageCount> summarize_coverage(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("coverage: cannot read '{}'", path));
  std::vector<CoverageCount> counts;
  const std::string page = "\001page\002";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("C '", 0) != 0) continue;
    const size_t end = line.rfind("' ");
    const size_t at = line.find(page);
    if (end == std::string::npos || at == std::string::npos || at > end)
      throw ConfigError(fmt::format("coverage: '{}': a point without a page: {}", path, line));
    const size_t v = at + page.size();
    std::string kind = line.substr(v, line.find_first_of("/\001'", v) - v);
    if (kind.rfind("v_", 0) == 0) kind = kind.substr(2);
    const uint64_t n = std::stoull(line.substr(end + 2));
    auto it = counts.begin();
    while (it != counts.end() && it->kind != kind) ++it;
    if (it == counts.end()) it = counts.insert(counts.end(), CoverageCount{kind, 0, 0});
    ++it->total;
    if (n > 0) ++it->covered;
  }
  // A fixed order for the kinds Verilator writes (line, branch, toggle), any other after them.
  auto rank = [](const std::string& k) {
    const char* order[] = {"line", "branch", "toggle"};
    for (int i = 0; i < 3; ++i)
      if (k == order[i]) return i;
    return 3;
  };
  std::stable_sort(
      counts.begin(), counts.end(),
      [&](const CoverageCount& a, const CoverageCount& b) { return rank(a.kind) < rank(b.kind); });
  return counts;
}

}  // namespace fracsim::rtl
