// The shape every fuzz target shares: the input's bytes go through one of the CLI's loaders;
// a ConfigError (what the CLI reports with exit 2) is a normal outcome, and anything else that
// escapes (InternalError, another exception) aborts, so libFuzzer keeps the input as a crash.
// Sanitizer reports, leaks, timeouts and out-of-memory are libFuzzer's own findings.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "isa/error.h"

namespace fracsim::fuzz {

template <typename F>
int guarded(F&& load) {
  try {
    load();
  } catch (const ConfigError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a ConfigError: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-standard exception\n");
    std::abort();
  }
  return 0;
}

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace fracsim::fuzz
