#include "sim/cli/progress_line.h"

#include <unistd.h>

#include <iostream>

namespace fracsim::cli {

ProgressLine::ProgressLine()
    : active_(isatty(STDERR_FILENO) != 0), previous_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() {
  if (shown_) std::cerr << "\n" << std::flush;
}

void ProgressLine::update(const std::string& text, bool last) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!last && now - previous_ < std::chrono::milliseconds(200)) return;
  previous_ = now;
  shown_ = true;
  std::cerr << "\r" << text << std::flush;
}

void ProgressLine::clear() {
  if (shown_) std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace fracsim::cli
