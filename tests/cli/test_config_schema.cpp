// `fracsim config schema` validates every shipped config and rejects wrong ones (with Debian's
// python3-jsonschema), its quantity patterns accept what the parser accepts, and the config
// reference in sim/README.md is the current output of `fracsim config doc`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/config_schema.h"
#include "sim/units.h"
#include "tests/common/cli_runner.h"

namespace fracsim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using testing::run_fracsim;
using testing::run_shell;

const fs::path kSource = FRACSIM_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A YAML document as fracsim reads its scalars (sim::scalar_json); a key without a value is
// absent to the parser, so it is left out.
Json as_fracsim_reads(const YAML::Node& n) {
  if (n.IsMap()) {
    Json o = Json::object();
    for (const auto& kv : n)
      if (!kv.second.IsNull()) o[kv.first.Scalar()] = as_fracsim_reads(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& e : n) a.push_back(as_fracsim_reads(e));
    return a;
  }
  return sim::scalar_json(n.Scalar());
}

void write_json(const fs::path& p, const std::string& yaml_text) {
  std::ofstream(p) << as_fracsim_reads(load_yaml_string(yaml_text, p.string())).dump(1) << "\n";
}

// The schema from the binary, in a fresh folder.
std::string schema_dir() {
  const std::string dir = testing::temp_dir("config-schema");
  const auto r = run_fracsim("config schema -o '" + dir + "/schema.json'");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.empty());
  return dir;
}

testing::CliResult validate(const std::string& dir, const std::string& args) {
  return run_shell("/usr/bin/python3 '" + (kSource / "tests/cli/validate_json_schema.py").string() +
                   "' '" + dir + "/schema.json' " + args + " 2>&1");
}

TEST_CASE("every shipped config and energy table validates against fracsim config schema") {
  const std::string dir = schema_dir();
  std::string configs, tables, expected_configs, expected_tables;
  for (const fs::path& folder : {kSource / "configs", kSource / "configs/scale"}) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(folder))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string name = f.stem().string();
      write_json(fs::path(dir) / (name + ".json"), read(f));
      configs += " '" + dir + "/" + name + ".json'";
      expected_configs += name + ": ok\n";
    }
  }
  for (const auto& e : fs::directory_iterator(kSource / "configs/energy")) {
    const std::string name = "energy-" + e.path().stem().string();
    write_json(fs::path(dir) / (name + ".json"), read(e.path()));
    tables += " '" + dir + "/" + name + ".json'";
    expected_tables += name + ": ok\n";
  }
  // Every shipped machine config: the 3 of configs/ and the 7 of the scale series.
  CHECK(std::count(expected_configs.begin(), expected_configs.end(), '\n') == 10);
  const auto r = validate(dir, configs);
  CHECK(r.out == expected_configs);
  CHECK(r.code == 0);
  CHECK_FALSE(tables.empty());
  const auto t = validate(dir, "--def energy_table" + tables);
  CHECK(t.out == expected_tables);
  CHECK(t.code == 0);
}

TEST_CASE("fracsim config schema rejects a wrong config, naming the key") {
  const std::string dir = schema_dir();
  const std::string tiny = read(kSource / "configs/tiny.yaml");
  auto wrong = [&](const std::string& name, const std::string& from, const std::string& to) {
    const size_t at = tiny.find(from);
    REQUIRE(at != std::string::npos);
    std::string text = tiny;
    text.replace(at, from.size(), to);
    // fracsim refuses it too (exit 2).
    std::ofstream(fs::path(dir) / (name + ".yaml")) << text;
    const auto parsed = run_fracsim("config check '" + dir + "/" + name + ".yaml'");
    CHECK(parsed.code == 2);
    write_json(fs::path(dir) / (name + ".json"), text);
    return validate(dir, "'" + dir + "/" + name + ".json'");
  };
  auto r = wrong("negative-fanout", "fanout: 2", "fanout: -2");
  CHECK(r.out == "negative-fanout: levels/0/fanout: -2 is less than the minimum of 1\n");
  CHECK(r.code == 1);
  r = wrong("unknown-key", "  banks: 8", "  banks: 8\n    colour: red");
  CHECK(r.out ==
        "unknown-key: root/memory: Additional properties are not allowed ('colour' was "
        "unexpected)\n");
  CHECK(r.code == 1);
  r = wrong("misspelt-unit", "capacity: 64 MiB", "capacity: 64 Mib");
  CHECK(r.out.rfind("misspelt-unit: root/memory/capacity: '64 Mib' does not match '^", 0) == 0);
  CHECK(r.code == 1);
  r = wrong("zero-bandwidth", "bandwidth: 32 GB/s\n    latency", "bandwidth: 0 GB/s\n    latency");
  CHECK(r.out.rfind("zero-bandwidth: root/memory/bandwidth: '0 GB/s' does not match '^", 0) == 0);
  r = wrong("unknown-decomposer", "decomposer: halving", "decomposer: greedy");
  CHECK(r.out == "unknown-decomposer: decomposer: 'greedy' is not one of ['halving', 'search']\n");
  r = wrong("fractional-lanes", "vector: {lanes: 8}", "vector: {lanes: 8.5}");
  CHECK(r.out == "fractional-lanes: levels/1/leaf/vector/lanes: '8.5' is not of type 'integer'\n");
  r = wrong("no-leaf", "    leaf:", "    leafs:");
  CHECK(r.out.find("no-leaf: levels: ") != std::string::npos);
  CHECK(r.out.find("Additional properties are not allowed ('leafs' was unexpected)") !=
        std::string::npos);
  CHECK(r.code == 1);
}

// The quantity patterns against the parser, on texts whose value is whole in the base unit
// (the one rule of quantities a pattern cannot express).
TEST_CASE("the schema's quantity pattern accepts exactly the quantities the parser accepts") {
  const Json schema = sim::config_json_schema();
  const Json& memory = schema["$defs"]["memory"]["properties"];
  struct Case {
    std::string key;
    sim::QuantityKind kind;
    bool positive;
  };
  const std::vector<Case> keys{{"capacity", sim::QuantityKind::bytes, true},
                               {"latency", sim::QuantityKind::time, false}};
  const std::vector<std::string> texts{
      "64 KiB", "64KiB",   " 64 KiB ", "\t1 MiB", "1.5 KiB",   ".5 KiB", "5. KiB",
      "0 KiB",  "0.0 KiB", "00 KiB",   "-1 KiB",  "1.2.3 KiB", "64 Kib", "64",
      "KiB",    "1e3 KiB", "64 KiB/s", "64 kib",  "10 ns",     "0 ns",   "0.5 ns",
      "-0 ns",  "1 s",     "1 S",      "1,5 ns",  "+1 ns",     "1 ns x"};
  for (const Case& c : keys) {
    const std::regex pattern(memory[c.key]["pattern"].get<std::string>(), std::regex::ECMAScript);
    for (const std::string& t : texts) {
      CAPTURE(c.key);
      CAPTURE(t);
      bool parsed = true;
      try {
        parsed = sim::parse_quantity_text(t, c.kind, "") > 0 || !c.positive;
      } catch (const ConfigError&) {
        parsed = false;
      }
      CHECK(std::regex_search(t, pattern) == parsed);
    }
  }
}

TEST_CASE("sim/README.md's config reference is the current output of fracsim config doc") {
  const std::string readme = read(kSource / "sim/README.md");
  CHECK_MESSAGE(sim::with_config_reference(readme, "sim/README.md") == readme,
                "sim/README.md's config reference is stale; regenerate it with: build/fracsim "
                "config doc --update sim/README.md");
  const auto r = run_fracsim("config doc");
  CHECK(r.code == 0);
  CHECK(r.out == sim::config_reference_markdown());
  CHECK(readme.find(r.out) != std::string::npos);
}

TEST_CASE("fracsim config doc --update refuses a file without the markers") {
  const std::string dir = testing::temp_dir("config-doc");
  std::ofstream(dir + "/x.md") << "# no markers\n";
  const auto r = run_fracsim("config doc --update '" + dir + "/x.md'");
  CHECK(r.code == 2);
  CHECK(r.out.find(dir + "/x.md: no config reference markers") != std::string::npos);
  CHECK(read(dir + "/x.md") == "# no markers\n");
}

}  // namespace
}  // namespace fracsim
