// The bandwidth of one memory shared by the transfers in progress on it, as a fluid: at every
// moment each transfer moves at min(its link's bandwidth, a fair share of the memory's), the
// shares computed by water-filling (transfers capped below the fair share keep their cap, the
// rest split what remains equally). Rates change only when a transfer starts or ends, so time
// advances per transfer, never per cycle. Pure: the caller passes the time; SystemC lives in
// sim/memory.h.
//
// Exactness: bytes are tracked in byte-picoseconds-per-second units (bytes * 10^12) and rates
// in whole bytes per second, so a lone transfer of B bytes at R bytes/s ends after exactly
// ceil(B * 10^12 / R) ps, and k identical transfers started together all end together after
// ceil(k * B * 10^12 / W) ps when the memory's W is the bottleneck (shares are floor(W / k)
// bytes/s; W is a multiple of k in every config we ship, so this is exact).
//
// A transfer may stand for `copies` identical transfers of identical initiators (folding): it
// takes `copies` shares and moves at the rate of one of them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace fracsim::sim {

class SharedBandwidth {
 public:
  explicit SharedBandwidth(uint64_t bytes_per_second) : bandwidth_(bytes_per_second) {}

  // Starts a transfer at `now_ps`; returns its id.
  int start(uint64_t now_ps, uint64_t bytes, uint64_t cap_bytes_per_second, uint64_t copies);
  // The earliest time an active transfer ends.
  std::optional<uint64_t> next_end() const;
  // Advances to `now_ps` and returns the ids of the transfers that have ended (in start order).
  std::vector<int> advance(uint64_t now_ps);
  size_t active() const { return flows_.size(); }

 private:
  __extension__ using U128 = unsigned __int128;
  struct Flow {
    int id;
    U128 remaining;  // bytes * 10^12
    uint64_t cap, copies, rate;
  };
  void settle(uint64_t now_ps);
  void share();

  uint64_t bandwidth_;
  uint64_t last_ps_ = 0;
  int next_id_ = 0;
  std::vector<Flow> flows_;
};

}  // namespace fracsim::sim
