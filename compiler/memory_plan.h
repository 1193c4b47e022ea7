// Placement of a program's tensors in the root memory. Each tensor is live over an inclusive range
// of instruction indices; two tensors may share bytes only when their ranges do not meet, so an
// intermediate's bytes are reused once its last reader has run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fracsim::compiler {

// Root-memory alignment of every tensor (one cache line / DMA burst).
constexpr uint64_t kRootAlignment = 64;

struct TensorLifetime {
  std::string name;
  uint64_t bytes = 0;
  int first = 0;  // first instruction that touches the tensor (its producer, for intermediates)
  int last = 0;   // last instruction that touches it, inclusive
};

struct TensorPlacement {
  std::string name;
  uint64_t address = 0;
  uint64_t bytes = 0;
  int first = 0;
  int last = 0;

  uint64_t end() const { return address + bytes; }
  bool live_with(const TensorPlacement& o) const { return first <= o.last && o.first <= last; }
};

class MemoryPlan {
 public:
  // Places the tensors first fit: those live for the whole range of instructions first, in the
  // given order, then the others by first instruction (ties in the given order). A tensor takes
  // the lowest aligned address where it overlaps no already placed tensor that is live with it.
  static MemoryPlan first_fit(const std::vector<TensorLifetime>& tensors,
                              uint64_t alignment = kRootAlignment);

  // In the order of the requests given to first_fit.
  const std::vector<TensorPlacement>& tensors() const { return tensors_; }
  const TensorPlacement& at(const std::string& name) const;  // InternalError when absent
  // Highest end address, rounded up to the alignment: the root memory the program needs.
  uint64_t footprint() const { return footprint_; }

 private:
  std::vector<TensorPlacement> tensors_;
  uint64_t footprint_ = 0;
};

uint64_t align_up(uint64_t value, uint64_t alignment);

}  // namespace fracsim::compiler
