// The key declarations (sim/config_schema.h) are consistent, and ConfigMapping holds the parser
// to them: a key read but not declared, declared but not read, or read as another kind is a bug.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/config_mapping.h"
#include "sim/config_schema.h"
#include "sim/units.h"

namespace fracsim::sim {
namespace {

void each_mapping(const MappingDecl& m, const std::function<void(const MappingDecl&)>& f,
                  std::set<const MappingDecl*>& seen) {
  if (!seen.insert(&m).second) return;
  f(m);
  for (const ConfigKey& k : m.keys)
    if (k.mapping) each_mapping(*k.mapping, f, seen);
}

TEST_CASE("every declared default is a valid value of its key") {
  std::set<const MappingDecl*> seen;
  int defaults = 0;
  each_mapping(
      machine_config_decl(),
      [&](const MappingDecl& m) {
        std::set<std::string> names;
        for (const ConfigKey& k : m.keys) {
          CAPTURE(m.id);
          CAPTURE(k.name);
          CHECK(names.insert(k.name).second);  // one declaration per key
          CHECK_FALSE(k.description.empty());
          CHECK((k.mapping != nullptr) == (k.kind == KeyKind::mapping || k.kind == KeyKind::list ||
                                           k.kind == KeyKind::named_mappings ||
                                           k.kind == KeyKind::mapping_or_file));
          if (k.default_kind == DefaultKind::mapping) {
            // An optional mapping reads as an empty one: every key in it needs a default.
            for (const ConfigKey& e : k.mapping->keys) CHECK_FALSE(e.required());
          }
          if (k.default_kind != DefaultKind::value) continue;
          ++defaults;
          const auto json = scalar_json(k.default_text);
          switch (k.kind) {
            case KeyKind::integer:
              REQUIRE(json.is_number_integer());
              CHECK(json.get<int64_t>() >= k.min);
              CHECK(json.get<int64_t>() <= k.max);
              break;
            case KeyKind::boolean:
              CHECK(json.is_boolean());
              break;
            case KeyKind::quantity:
              CHECK((parse_quantity_text(k.default_text, k.unit, "") > 0 || !k.positive));
              break;
            case KeyKind::choice:
              CHECK(std::find(k.choices.begin(), k.choices.end(), k.default_text) !=
                    k.choices.end());
              break;
            default:
              FAIL("a default of a kind that takes none");
          }
        }
      },
      seen);
  // decomposer, hazards, pipeline_depth and decode_cycles (root, level), latency (memory,
  // link), banks, multicast, pipelined, posted_writes, keep_outputs, resident_partial_sums,
  // hold_partial_sums, overlap, prefetch, sort width, backend, overlapped_epilogue.
  CHECK(defaults == 20);
}

const MappingDecl& test_decl() {
  static const MappingDecl kDecl{"test",
                                 "a mapping for the tests",
                                 {integer_key("a", "an integer").at_least(0).defaults_to("1"),
                                  boolean_key("b", "a boolean").defaults_to("false")}};
  return kDecl;
}

ConfigMapping test_mapping(const std::string& text) {
  return ConfigMapping(YamlMap(load_yaml_string(text, "t.yaml"), "t.yaml", ""), test_decl());
}

TEST_CASE("ConfigMapping reads through the declarations and refuses to drift from them") {
  ConfigMapping m = test_mapping("a: 5\n");
  CHECK(m.integer("a") == 5);
  CHECK(m.boolean("b") == false);
  CHECK(m.finish().dump() == R"({"a":5,"b":false,"defaulted":["b"]})");
  // A key the parser forgets to read.
  ConfigMapping forgot = test_mapping("a: 5\n");
  forgot.integer("a");
  CHECK_THROWS_AS(forgot.finish(), InternalError);
  // A key read but not declared, and one read as another kind.
  ConfigMapping undeclared = test_mapping("a: 5\n");
  CHECK_THROWS_AS(undeclared.integer("c"), InternalError);
  CHECK_THROWS_AS(undeclared.boolean("a"), InternalError);
  // A derived default where the declaration has a value, and the range from the declaration.
  CHECK_THROWS_AS(test_mapping("b: true\n").integer("a", 7), InternalError);
  try {
    test_mapping("a: -1\n").integer("a");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "t.yaml:1: a: must be at least 0, got -1");
  }
}

}  // namespace
}  // namespace fracsim::sim
