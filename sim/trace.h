// A timeline of the stages of every simulated node, written as Chrome/Perfetto trace-event
// JSON: one process per node (pid = its depth-first pre-order number in the machine tree, named
// by its path), one thread per pipeline stage (tid 0..4 = ID, LD, EX, RD, WB), one complete
// event ("ph": "X") per stage occupancy with ts and dur in microseconds of simulated time.
// Folded runs show the nodes that were simulated; the nodes they stood for have no track.
// Deterministic: events are sorted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fracsim::sim {

class TraceRecorder {
 public:
  // `name` must outlive the recorder (an op name from the op table, a stage name).
  void record(size_t node, int stage, const std::string* name, uint64_t begin_ps, uint64_t end_ps);
  void name_node(size_t node, const std::string& path);
  size_t events() const { return events_.size(); }
  void clear() {
    events_.clear();
    names_.clear();
  }
  std::string json() const;

 private:
  struct Event {
    size_t node;
    int stage;
    const std::string* name;
    uint64_t begin, end;
  };
  std::vector<Event> events_;
  std::map<size_t, std::string> names_;
};

}  // namespace fracsim::sim
