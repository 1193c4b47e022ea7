// A progress line on stderr, for commands that run long: shown only when stderr is a terminal,
// redrawn in place at most a few times a second (and always for the last step), cleared when
// the work ends (the destructor ends the line instead when an error cut the work short).
#pragma once

#include <chrono>
#include <string>

namespace fracsim::cli {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Whether anything is shown at all (stderr a terminal).
  bool active() const { return active_; }
  // Shows `text` when `last` or when enough time has passed since the previous one.
  void update(const std::string& text, bool last);
  // Erases the line (the work is done).
  void clear();

 private:
  bool active_ = false, shown_ = false;
  std::chrono::steady_clock::time_point previous_;
};

}  // namespace fracsim::cli
