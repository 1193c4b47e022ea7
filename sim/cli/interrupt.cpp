#include "sim/cli/interrupt.h"

#include <csignal>
#include <cstring>

#include <unistd.h>

namespace fracsim::cli {
namespace {

// Read by the handler, so plain storage written before the flag that publishes it.
char pending_temporary[4096];
volatile std::sig_atomic_t pending_set = 0;
volatile std::sig_atomic_t deferred = 0;
volatile std::sig_atomic_t received = 0;

void write_stderr(const char* s) {
  size_t left = std::strlen(s);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, s, left);
    if (n <= 0) return;
    s += n;
    left -= static_cast<size_t>(n);
  }
}

// Only async-signal-safe calls: unlink, write, _exit.
void on_signal(int sig) {
  if (deferred) {
    received = sig;
    return;
  }
  if (pending_set) ::unlink(pending_temporary);
  write_stderr(sig == SIGINT ? "error: interrupted by SIGINT (no file is left half-written)\n"
                             : "error: interrupted by SIGTERM (no file is left half-written)\n");
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a sweep's waitpid and sleep return early to look at the signal.
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

void defer_interrupts() { deferred = 1; }

int interrupt_signal() { return received; }

std::string signal_name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

void set_pending_temporary(const std::string& path) {
  pending_set = 0;
  if (path.empty() || path.size() >= sizeof pending_temporary) return;
  std::memcpy(pending_temporary, path.c_str(), path.size() + 1);
  pending_set = 1;
}

}  // namespace fracsim::cli
