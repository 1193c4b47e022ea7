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

}  // namespace fracsim::rtl
