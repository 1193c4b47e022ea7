// A small valid machine config as text, and the helpers the config-error tests build on: each
// error test changes one line of it and asserts the whole message.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "isa/error.h"
#include "sim/machine_spec.h"

namespace fracsim::testing {

// 2 clusters x 2 cores. Line numbers matter to the tests: see the margin.
inline const std::string kTwoLevelMachine =
    "machine: m\n"                                           //  1
    "root:\n"                                                //  2
    "  clock: 1 GHz\n"                                       //  3
    "  lfu_throughput: 16\n"                                 //  4
    "  memory: {capacity: 64 MiB, bandwidth: 32 GB/s}\n"     //  5
    "levels:\n"                                              //  6
    "  - name: cluster\n"                                    //  7
    "    fanout: 2\n"                                        //  8
    "    lfu_throughput: 8\n"                                //  9
    "    memory: {capacity: 256 KiB, bandwidth: 64 GB/s}\n"  // 10
    "    link: {bandwidth: 32 GB/s, latency: 20 ns}\n"       // 11
    "  - name: core\n"                                       // 12
    "    fanout: 2\n"                                        // 13
    "    memory: {capacity: 64 KiB, bandwidth: 64 GB/s}\n"   // 14
    "    link: {bandwidth: 16 GB/s}\n"                       // 15
    "    leaf:\n"                                            // 16
    "      matrix: {rows: 4, cols: 4}\n"                     // 17
    "      vector: {lanes: 8}\n";                            // 18

// `text` with the one occurrence of `from` replaced by `to` (the test fails if there is none or
// more than one).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "not found: " << from);
  REQUIRE_MESSAGE(text.find(from, at + 1) == std::string::npos, "found twice: " << from);
  return text.replace(at, from.size(), to);
}

// The message of the ConfigError that parsing `text` as `file` throws, or "(no error)".
inline std::string machine_error_of(const std::string& text, const std::string& file = "bad.yaml") {
  try {
    sim::parse_machine_spec(text, file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace fracsim::testing
