#include "sim/trace.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fracsim::sim {
namespace {

constexpr const char* kStages[] = {"ID", "LD", "EX", "RD", "WB"};

// A name as a JSON string, escaped by nlohmann's serializer (bytes that are not UTF-8 become
// U+FFFD rather than an invalid file). The events themselves are laid out by hand, one per
// line, with ts and dur in exact fixed-point microseconds, which nlohmann's shortest-double
// printing would not keep.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Picoseconds as microseconds, exactly (six decimals).
std::string micros(uint64_t ps) { return fmt::format("{}.{:06}", ps / 1000000, ps % 1000000); }

}  // namespace

void TraceRecorder::record(size_t node, int stage, const std::string* name, uint64_t begin_ps,
                           uint64_t end_ps) {
  events_.push_back(Event{node, stage, name, begin_ps, end_ps});
}

void TraceRecorder::name_node(size_t node, const std::string& path) {
  if (names_.count(node) == 0) names_.emplace(node, path);
}

std::string TraceRecorder::json() const {
  std::vector<Event> ev = events_;
  std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    return std::tie(a.node, a.stage, a.begin, a.end, *a.name) <
           std::tie(b.node, b.stage, b.begin, b.end, *b.name);
  });
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto line = [&](const std::string& s) {
    out += first ? "  " : ",\n  ";
    out += s;
    first = false;
  };
  for (const auto& [node, path] : names_) {
    line(
        fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": {}}}}})",
                    node, quoted(path)));
    line(fmt::format(
        R"({{"ph": "M", "name": "process_sort_index", "pid": {}, "args": {{"sort_index": {}}}}})",
        node, node));
    for (int s = 0; s < 5; ++s)
      line(fmt::format(
          R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
          node, s, quoted(kStages[s])));
  }
  for (const Event& e : ev)
    line(fmt::format(R"({{"ph": "X", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}}})",
                     quoted(*e.name), e.node, e.stage, micros(e.begin), micros(e.end - e.begin)));
  out += "\n]}\n";
  return out;
}

}  // namespace fracsim::sim
