// Running the fracsim binary from a test: exit code and output, and fresh temporary folders.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace fracsim::testing {

struct CliResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line; its stdout (append 2>&1 for stderr too) and exit code.
inline CliResult run_shell(const std::string& cmd) {
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `fracsim ARGS` in the source folder (ARGS may continue with a shell pipeline).
inline CliResult run_fracsim(const std::string& args) {
  return run_shell(std::string("cd '") + FRACSIM_SOURCE_DIR + "' && '" + FRACSIM_BINARY + "' " +
                   args + " 2>&1");
}

// A new empty folder under the system's temporary folder, named after `prefix`.
inline std::string temp_dir(const std::string& prefix) {
  // A fresh directory each call: a name made of the pid alone could be one that an earlier
  // process of the same pid left behind, with its files.
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

}  // namespace fracsim::testing
