// Quantities with units: exact base values, canonical text, and the exact error messages.
#include <doctest/doctest.h>

#include <string>

#include <yaml-cpp/yaml.h>

#include "isa/error.h"
#include "sim/units.h"

namespace fracsim::sim {
namespace {

uint64_t parse(const std::string& text, QuantityKind kind) {
  return parse_quantity_text(text, kind, "k");
}

// The message of the ConfigError that parsing `text` throws, or "(no error)".
std::string error_of(const std::string& text, QuantityKind kind) {
  try {
    parse_quantity_text(text, kind, "f.yaml:3: root.memory.capacity");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("every size unit parses to exact bytes") {
  CHECK(parse("7 B", QuantityKind::bytes) == 7);
  CHECK(parse("3 KB", QuantityKind::bytes) == 3000);
  CHECK(parse("3 MB", QuantityKind::bytes) == 3000000);
  CHECK(parse("3 GB", QuantityKind::bytes) == 3000000000ULL);
  CHECK(parse("3 TB", QuantityKind::bytes) == 3000000000000ULL);
  CHECK(parse("3 KiB", QuantityKind::bytes) == 3072);
  CHECK(parse("3 MiB", QuantityKind::bytes) == 3145728);
  CHECK(parse("3 GiB", QuantityKind::bytes) == 3221225472ULL);
  CHECK(parse("3 TiB", QuantityKind::bytes) == 3298534883328ULL);
  CHECK(parse("512KiB", QuantityKind::bytes) == 524288);  // the space is optional
  CHECK(parse("  0.5 KiB ", QuantityKind::bytes) == 512);
  CHECK(parse("1.5 KB", QuantityKind::bytes) == 1500);
}

TEST_CASE("every bandwidth unit parses to exact bytes per second") {
  CHECK(parse("9 B/s", QuantityKind::bandwidth) == 9);
  CHECK(parse("2 KB/s", QuantityKind::bandwidth) == 2000);
  CHECK(parse("2 MB/s", QuantityKind::bandwidth) == 2000000);
  CHECK(parse("256 GB/s", QuantityKind::bandwidth) == 256000000000ULL);
  CHECK(parse("2 TB/s", QuantityKind::bandwidth) == 2000000000000ULL);
  CHECK(parse("2 KiB/s", QuantityKind::bandwidth) == 2048);
  CHECK(parse("2 MiB/s", QuantityKind::bandwidth) == 2097152);
  CHECK(parse("2 GiB/s", QuantityKind::bandwidth) == 2147483648ULL);
  CHECK(parse("2 TiB/s", QuantityKind::bandwidth) == 2199023255552ULL);
  CHECK(parse("12.5 GB/s", QuantityKind::bandwidth) == 12500000000ULL);
}

TEST_CASE("every frequency unit parses to exact Hz") {
  CHECK(parse("50 Hz", QuantityKind::frequency) == 50);
  CHECK(parse("50 kHz", QuantityKind::frequency) == 50000);
  CHECK(parse("50 MHz", QuantityKind::frequency) == 50000000);
  CHECK(parse("1 GHz", QuantityKind::frequency) == 1000000000);
  CHECK(parse("0.5 GHz", QuantityKind::frequency) == 500000000);
  CHECK(parse("1.25 GHz", QuantityKind::frequency) == 1250000000);
}

TEST_CASE("every time unit parses to exact picoseconds") {
  CHECK(parse("4 ps", QuantityKind::time) == 4);
  CHECK(parse("100 ns", QuantityKind::time) == 100000);
  CHECK(parse("2.5 ns", QuantityKind::time) == 2500);
  CHECK(parse("3 us", QuantityKind::time) == 3000000);
  CHECK(parse("3 ms", QuantityKind::time) == 3000000000ULL);
  CHECK(parse("3 s", QuantityKind::time) == 3000000000000ULL);
  CHECK(parse("0 ns", QuantityKind::time) == 0);
}

TEST_CASE("every energy unit parses to exact femtojoules") {
  CHECK(parse("6 fJ", QuantityKind::energy) == 6);
  CHECK(parse("0.2 pJ", QuantityKind::energy) == 200);
  CHECK(parse("6 nJ", QuantityKind::energy) == 6000000);
  CHECK(parse("6 uJ", QuantityKind::energy) == 6000000000ULL);
}

TEST_CASE("every power unit parses to exact nanowatts") {
  CHECK(parse("7 nW", QuantityKind::power) == 7);
  CHECK(parse("62.5 uW", QuantityKind::power) == 62500);
  CHECK(parse("15 mW", QuantityKind::power) == 15000000);
  CHECK(parse("12.8 W", QuantityKind::power) == 12800000000ULL);
  CHECK(format_quantity(62500, QuantityKind::power) == "62500 nW");
  CHECK(format_quantity(15000000, QuantityKind::power) == "15 mW");
  CHECK(format_quantity(2000000000, QuantityKind::power) == "2 W");
  CHECK(error_of("5 mJ", QuantityKind::power) ==
        "f.yaml:3: root.memory.capacity: expected a power such as '15 mW', got '5 mJ'");
  CHECK(error_of("5 MW", QuantityKind::power) ==
        "f.yaml:3: root.memory.capacity: expected a power such as '15 mW', got '5 MW'");
  CHECK(error_of("0.5 nW", QuantityKind::power) ==
        "f.yaml:3: root.memory.capacity: '0.5 nW' is not a whole number of nanowatts");
  CHECK(error_of("-1 W", QuantityKind::power) ==
        "f.yaml:3: root.memory.capacity: must not be negative, got '-1 W'");
}

TEST_CASE("format_quantity uses the largest unit that divides exactly") {
  CHECK(format_quantity(262144, QuantityKind::bytes) == "256 KiB");
  CHECK(format_quantity(67108864, QuantityKind::bytes) == "64 MiB");
  CHECK(format_quantity(8589934592ULL, QuantityKind::bytes) == "8 GiB");
  CHECK(format_quantity(1500, QuantityKind::bytes) == "1500 B");
  CHECK(format_quantity(3000000, QuantityKind::bytes) == "3 MB");
  CHECK(format_quantity(1024000, QuantityKind::bytes) == "1000 KiB");  // KiB > KB
  CHECK(format_quantity(0, QuantityKind::bytes) == "0 B");
  CHECK(format_quantity(256000000000ULL, QuantityKind::bandwidth) == "256 GB/s");
  CHECK(format_quantity(1024000000000ULL, QuantityKind::bandwidth) == "1024 GB/s");
  CHECK(format_quantity(2147483648ULL, QuantityKind::bandwidth) == "2 GiB/s");
  CHECK(format_quantity(1000000000, QuantityKind::frequency) == "1 GHz");
  CHECK(format_quantity(1250000000, QuantityKind::frequency) == "1250 MHz");
  CHECK(format_quantity(100000, QuantityKind::time) == "100 ns");
  CHECK(format_quantity(2500, QuantityKind::time) == "2500 ps");
  CHECK(format_quantity(0, QuantityKind::time) == "0 ps");
  CHECK(format_quantity(3000000000000ULL, QuantityKind::time) == "3 s");
  CHECK(format_quantity(200, QuantityKind::energy) == "200 fJ");
  CHECK(format_quantity(6000, QuantityKind::energy) == "6 pJ");
}

TEST_CASE("format then parse gives the value back") {
  for (uint64_t v : {1ULL, 999ULL, 1024ULL, 1000ULL, 65536ULL, 123456789ULL, 5000000000000ULL}) {
    for (auto kind : {QuantityKind::bytes, QuantityKind::bandwidth, QuantityKind::frequency,
                      QuantityKind::time, QuantityKind::energy, QuantityKind::power}) {
      CAPTURE(v);
      CHECK(parse(format_quantity(v, kind), kind) == v);
    }
  }
}

TEST_CASE("a quantity of the wrong kind names the expected kind and an example") {
  CHECK(error_of("12 GHz", QuantityKind::bandwidth) ==
        "f.yaml:3: root.memory.capacity: expected a bandwidth such as '256 GB/s', got '12 GHz'");
  CHECK(error_of("64 GB/s", QuantityKind::bytes) ==
        "f.yaml:3: root.memory.capacity: expected a size such as '512 KiB', got '64 GB/s'");
  CHECK(error_of("10 ns", QuantityKind::frequency) ==
        "f.yaml:3: root.memory.capacity: expected a frequency such as '1 GHz', got '10 ns'");
  CHECK(error_of("1 GHz", QuantityKind::time) ==
        "f.yaml:3: root.memory.capacity: expected a time such as '100 ns', got '1 GHz'");
  CHECK(error_of("1 ns", QuantityKind::energy) ==
        "f.yaml:3: root.memory.capacity: expected an energy such as '0.2 pJ', got '1 ns'");
}

TEST_CASE("garbage, a missing unit and a wrongly cased unit are rejected") {
  const std::string p = "f.yaml:3: root.memory.capacity: expected a size such as '512 KiB', got ";
  CHECK(error_of("lots", QuantityKind::bytes) == p + "'lots'");
  CHECK(error_of("512", QuantityKind::bytes) == p + "'512'");
  CHECK(error_of("", QuantityKind::bytes) == p + "''");
  CHECK(error_of("512 kib", QuantityKind::bytes) == p + "'512 kib'");
  CHECK(error_of("1.2.3 KiB", QuantityKind::bytes) == p + "'1.2.3 KiB'");
  CHECK(error_of("1e3 B", QuantityKind::bytes) == p + "'1e3 B'");
  CHECK(error_of("KiB", QuantityKind::bytes) == p + "'KiB'");
  CHECK(error_of("-KiB", QuantityKind::bytes) == p + "'-KiB'");
  CHECK(error_of("1 GHZ", QuantityKind::frequency) ==
        "f.yaml:3: root.memory.capacity: expected a frequency such as '1 GHz', got '1 GHZ'");
}

TEST_CASE("a value that is not whole in the base unit is rejected") {
  CHECK(error_of("0.5 B", QuantityKind::bytes) ==
        "f.yaml:3: root.memory.capacity: '0.5 B' is not a whole number of bytes");
  CHECK(error_of("1.0001 KB", QuantityKind::bytes) ==
        "f.yaml:3: root.memory.capacity: '1.0001 KB' is not a whole number of bytes");
  CHECK(error_of("2.5 ps", QuantityKind::time) ==
        "f.yaml:3: root.memory.capacity: '2.5 ps' is not a whole number of picoseconds");
  CHECK(error_of("0.1 Hz", QuantityKind::frequency) ==
        "f.yaml:3: root.memory.capacity: '0.1 Hz' is not a whole number of Hz");
  CHECK(error_of("0.0001 pJ", QuantityKind::energy) ==
        "f.yaml:3: root.memory.capacity: '0.0001 pJ' is not a whole number of femtojoules");
  CHECK(error_of("0.5 B/s", QuantityKind::bandwidth) ==
        "f.yaml:3: root.memory.capacity: '0.5 B/s' is not a whole number of bytes per second");
  // Trailing zeros do not make a value fractional.
  CHECK(parse("2.000 B", QuantityKind::bytes) == 2);
}

TEST_CASE("negative and too large values are rejected") {
  CHECK(error_of("-5 ns", QuantityKind::time) ==
        "f.yaml:3: root.memory.capacity: must not be negative, got '-5 ns'");
  CHECK(error_of("20000000 TiB", QuantityKind::bytes) ==
        "f.yaml:3: root.memory.capacity: '20000000 TiB' is too large");
  CHECK(error_of("99999999999999999999 B", QuantityKind::bytes) ==
        "f.yaml:3: root.memory.capacity: expected a size such as '512 KiB', got "
        "'99999999999999999999 B'");
}

TEST_CASE("parse_quantity takes the line from the YAML node") {
  YAML::Node doc = YAML::Load("a: 1\nlink:\n  bandwidth: 12 GHz\n  latency: [1, 2]\n");
  try {
    parse_quantity(doc["link"]["bandwidth"], QuantityKind::bandwidth, "m.yaml",
                   "levels[0].link.bandwidth");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "m.yaml:3: levels[0].link.bandwidth: expected a bandwidth such as '256 GB/s', got "
          "'12 GHz'");
  }
  try {
    parse_quantity(doc["link"]["latency"], QuantityKind::time, "m.yaml", "link.latency");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "m.yaml:4: link.latency: expected a time such as '100 ns', got a list or map");
  }
  YAML::Node good = YAML::Load("clock: 0.5 GHz\n");
  CHECK(parse_quantity(good["clock"], QuantityKind::frequency, "m.yaml", "clock") == 500000000);
}

TEST_CASE("parse_quantity_text without a place gives the bare message") {
  try {
    parse_quantity_text("3 parsecs", QuantityKind::time, "");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "expected a time such as '100 ns', got '3 parsecs'");
  }
}

}  // namespace
}  // namespace fracsim::sim
