// Ctrl-C (SIGINT) and SIGTERM. By default the process ends at once: the temporary file the
// atomic writer has under way (if any) is removed, so every results file is either complete or
// absent, a message goes to stderr and the exit status is the conventional 128 + the signal
// (130, 143). A sweep defers them instead: the signal is recorded, and the sweep stops its runs
// itself, keeping every finished one (Interrupted carries the exit status back to main()).
#pragma once

#include <stdexcept>
#include <string>

namespace fracsim::cli {

// Immediate mode for SIGINT and SIGTERM; main() calls it before any command.
void install_interrupt_handlers();
// From now on SIGINT and SIGTERM are only recorded (interrupt_signal()).
void defer_interrupts();
// The signal recorded in deferred mode; 0 if none.
int interrupt_signal();
// "SIGINT" or "SIGTERM".
std::string signal_name(int signal);

// The temporary file this process is writing ("" when none): removed if a signal ends it.
void set_pending_temporary(const std::string& path);

// A command that stopped on a deferred signal; main() prints "error: " what() and exits with
// 128 + signal.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, const std::string& what) : std::runtime_error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace fracsim::cli
