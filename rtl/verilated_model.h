// What every Verilated leaf unit adapter shares: ownership of the Verilated class, evaluation
// with the waveform dump of a traced build, starting a VCD, and the coverage counts of an
// instrumented build. Include it only in a file that includes verilated.h (and
// verilated_vcd_c.h when Traced, verilated_cov.h when Covered) and the class's header first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "rtl/unit_coverage.h"

namespace fracsim::rtl {

template <typename V, bool Traced, bool Covered>
class VerilatedModel {
 public:
  VerilatedModel() : top_(std::make_unique<V>()) {}
  ~VerilatedModel() {
    top_->final();
    if constexpr (Traced) {
      if (vcd_) vcd_->close();
    }
    if constexpr (Covered) forget_model_coverage(*top_);
  }
  VerilatedModel(const VerilatedModel&) = delete;
  VerilatedModel& operator=(const VerilatedModel&) = delete;

  V& top() { return *top_; }
  V* operator->() { return top_.get(); }

  // Evaluates the model; a traced build dumps the signals as one more time step.
  void eval() {
    top_->eval();
    if constexpr (Traced) {
      if (vcd_) vcd_->dump(time_++);
    }
  }

  // Holds reset for one clock edge with the inputs idle (a clocked unit: clk, rst, in_valid,
  // out_ready).
  void pulse_reset() {
    top_->clk = 0;
    top_->rst = 1;
    top_->in_valid = 0;
    top_->out_ready = 0;
    eval();
    top_->clk = 1;
    eval();
    top_->clk = 0;
    top_->rst = 0;
    eval();
  }

  // Starts a VCD of every later evaluation; false when this build has no tracing.
  bool trace_to(const std::string& path) {
    if constexpr (Traced) {
      Verilated::traceEverOn(true);
      vcd_ = std::make_unique<VerilatedVcdC>();
      top_->trace(vcd_.get(), 99);
      vcd_->open(path.c_str());
      return vcd_->isOpen();
    } else {
      (void)path;
      return false;
    }
  }

  // Writes the coverage counts so far; false when this build is not instrumented.
  bool write_coverage(const std::string& path) {
    if constexpr (Covered) {
      return write_model_coverage(*top_, path);
    } else {
      (void)path;
      return false;
    }
  }

 private:
  struct NoTrace {};
  std::unique_ptr<V> top_;
  std::conditional_t<Traced, std::unique_ptr<VerilatedVcdC>, NoTrace> vcd_{};
  uint64_t time_ = 0;
};

namespace pins {

// Packs `lanes` 16-bit lanes into a Verilated port (an integer up to 64 bits, or a VlWide).
template <typename Port>
void put_lanes16(Port& port, const int16_t* v, int lanes) {
  if constexpr (std::is_integral_v<Port>) {
    uint64_t x = 0;
    for (int i = 0; i < lanes; ++i)
      x |= static_cast<uint64_t>(static_cast<uint16_t>(v[i])) << (16 * i);
    port = static_cast<Port>(x);
  } else {
    for (int i = 0; i < lanes; i += 2) {
      uint32_t w = static_cast<uint16_t>(v[i]);
      if (i + 1 < lanes) w |= static_cast<uint32_t>(static_cast<uint16_t>(v[i + 1])) << 16;
      port[i / 2] = w;
    }
  }
}

// Copies `lanes` 32-bit lanes from a Verilated unpacked array port (VlUnpacked<IData, N>).
template <typename Port>
void get_lanes32(const Port& port, int32_t* out, int lanes) {
  for (int i = 0; i < lanes; ++i) out[i] = static_cast<int32_t>(port[static_cast<size_t>(i)]);
}

}  // namespace pins

// A unit port (MatrixUnitPort, VectorUnitPort or SortUnitPort) backed by one Verilated model:
// the port's waveform and coverage are the model's.
template <typename Port, typename V, bool Traced, bool Covered>
class VerilatedPort : public Port {
 public:
  bool trace_to(const std::string& path) override { return top_.trace_to(path); }
  bool write_coverage(const std::string& path) override { return top_.write_coverage(path); }

 protected:
  VerilatedModel<V, Traced, Covered> top_;
};

}  // namespace fracsim::rtl
