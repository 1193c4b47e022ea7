#include "sim/config_schema.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/decompose/cost_model.h"
#include "isa/dtype.h"
#include "isa/error.h"
#include "isa/unit_kind.h"
#include "isa/yaml_map.h"
#include "sim/energy_table.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {

namespace {

ConfigKey make_key(std::string name, KeyKind kind, std::string description) {
  ConfigKey k;
  k.name = std::move(name);
  k.kind = kind;
  k.description = std::move(description);
  return k;
}

// The keys a root and a level share (the controller's).
ConfigKey pipeline_depth_key() {
  return integer_key("pipeline_depth",
                     "serial sub-instructions in flight (N); the cyclic segment has N sub-blocks")
      .at_least(1)
      .defaults_to("3");
}
ConfigKey decode_cycles_key() {
  return integer_key("decode_cycles", "ID stage cycles per sub-instruction")
      .at_least(0)
      .defaults_to("1");
}
ConfigKey lfu_throughput_key() {
  return integer_key("lfu_throughput", "elements the LFU combines per cycle").at_least(1);
}
ConfigKey energy_key(std::string name, std::string description) {
  return quantity_key(std::move(name), QuantityKind::energy, std::move(description));
}

// Every table, built once; a mapping refers to the tables of its nested mappings.
struct Tables {
  MappingDecl memory, link, matrix_shape, matrix, vector, sort, leaf, root, level, machine;
  MappingDecl memory_energy, leakage, root_energy, level_energy, energy;
  std::array<MappingDecl, isa::kUnitKinds> unit_energy;

  Tables() {
    memory = {
        "memory",
        "a node's memory (at the root, the main memory holding the program's tensors)",
        {quantity_key("capacity", QuantityKind::bytes, "bytes it holds").nonzero(),
         quantity_key("bandwidth", QuantityKind::bandwidth,
                      "shared by every transfer in flight; caps the DMA rate of each child "
                      "reading it")
             .nonzero(),
         quantity_key("latency", QuantityKind::time, "access latency").defaults_to("0 ns"),
         integer_key("banks", "banks; recorded, not yet timed").at_least(1).defaults_to("1")}};
    link = {
        "link",
        "the DMA link from a node to its parent's memory, full duplex",
        {quantity_key("bandwidth", QuantityKind::bandwidth, "per direction").nonzero(),
         quantity_key("latency", QuantityKind::time,
                      "added to the parent memory's latency, once per piece loaded or written back")
             .defaults_to("0 ns"),
         boolean_key("multicast",
                     "the siblings' links are one shared medium: bytes several of them load "
                     "for one piece are read from the parent once and delivered to all")
             .defaults_to("false"),
         boolean_key("pipelined",
                     "split transactions: a piece's load (or write-back) is requested as soon "
                     "as the piece is ready for it, so its latency passes while the transfers "
                     "ahead of it on the link still move; false: each transfer's latency starts "
                     "when the link is free")
             .defaults_to("false"),
         boolean_key("posted_writes",
                     "a write-back is posted: the node's WB stage sends a piece's data and takes "
                     "the next piece, the piece's sub-block is free once its data has left, and "
                     "the write lands (is readable, retires the piece) the latency later; false: "
                     "WB holds the piece until its write has landed")
             .defaults_to("false")}};
    matrix_shape = {"matrix_shape",
                    "the MAC array for inputs of one dtype",
                    {integer_key("rows", "MAC array rows for this dtype")
                         .at_least(1)
                         .derived_from("the matrix's rows"),
                     integer_key("cols", "MAC array columns for this dtype")
                         .at_least(1)
                         .derived_from("the matrix's cols")}};
    matrix = {
        "matrix",
        "the MAC array: rows x cols outputs at once, for every input dtype without its own "
        "entry",
        {integer_key("rows", "MAC array rows (output rows computed at once)").at_least(1),
         integer_key("cols", "MAC array columns (output columns computed at once)").at_least(1)}};
    for (isa::DType d : unit_input_dtypes(isa::UnitKind::matrix)) {
      const std::string name(isa::dtype_name(d));
      matrix.keys.push_back(
          mapping_key(name, matrix_shape, fmt::format("the MAC array for {} inputs", name))
              .optional_mapping());
    }
    vector = {
        "vector", "the vector unit", {integer_key("lanes", "elements per cycle").at_least(1)}};
    sort = {"sort",
            "the sort/merge unit",
            {integer_key("width", "elements compared per cycle").at_least(1).defaults_to("8")}};
    leaf = {"leaf",
            "the leaf's compute units and their implementation",
            {mapping_key("matrix", matrix, "the matrix unit"),
             mapping_key("vector", vector, "the vector unit"),
             mapping_key("sort", sort, "the sort/merge unit").optional_mapping(),
             choice_key("backend", {"model", "rtl"},
                        "the leaf compute implementation: the C++ unit models or the Verilated RTL")
                 .defaults_to("model"),
             boolean_key("overlapped_epilogue",
                         "a fused epilogue (an extension op's vector steps after its matrix step: "
                         "bias, residual add, activation) works on each block of outputs the MAC "
                         "array drains while the array computes the next, so only the last "
                         "block's epilogue adds to the array's time; false: the epilogue runs "
                         "after the array has finished")
                 .defaults_to("false")}};
    root = {"root",
            "the main memory and the controller beside it",
            {quantity_key("clock", QuantityKind::frequency,
                          "the root controller's clock, which also counts the run's cycles; the "
                          "period must be a whole number of picoseconds")
                 .nonzero(),
             pipeline_depth_key(), decode_cycles_key(), lfu_throughput_key(),
             mapping_key("memory", memory, "the main memory")}};
    level = {"level",
             "one level of nodes, each under one node of the level above (or the root)",
             {text_key("name", "names the level in stats; unique")
                  .derived_from("`level0`, `level1`, ... by position"),
              integer_key("fanout", "nodes of this level under each parent node").at_least(1),
              quantity_key("clock", QuantityKind::frequency,
                           "the level's clock; the period must be a whole number of picoseconds")
                  .nonzero()
                  .derived_from("the clock of the level above"),
              pipeline_depth_key(), decode_cycles_key(),
              lfu_throughput_key().only_above_leaf("a leaf has no LFU"),
              mapping_key("memory", memory, "each node's local memory"),
              mapping_key("link", link, "each node's DMA link to its parent's memory"),
              boolean_key("keep_outputs",
                          "outputs a node writes back stay in its tensor permutation table, so a "
                          "later instruction reading them, or accumulating onto them, hits; an "
                          "inner node given its parent's whole piece holds that instruction's "
                          "whole output where its memory allows, and a later instruction reads "
                          "any part of it there")
                  .defaults_to("true"),
              boolean_key("resident_partial_sums",
                          "a serial split along an accumulating reduce dim keeps each output tile "
                          "in local memory across its pieces")
                  .defaults_to("true"),
              boolean_key("hold_partial_sums",
                          "where the parent's pieces accumulate onto one tile, a node keeps its "
                          "part of it in local memory from one of them to the next, writing it "
                          "back after the last only")
                  .defaults_to("true"),
              boolean_key("overlap",
                          "a node takes its parent's next instruction while the pieces of the one "
                          "before still drain through its pipeline")
                  .defaults_to("true"),
              boolean_key("prefetch",
                          "a piece's loads that no unfinished write holds back start before "
                          "those that wait for one; a node takes its parent's next instruction "
                          "before the one whose output it reads has finished, and loads that "
                          "output once it has")
                  .defaults_to("true"),
              mapping_key("leaf", leaf, "the compute units of the leaves").only_leaf()}};
    std::vector<std::string> policies;
    for (isa::Policy p : {isa::Policy::halving, isa::Policy::search})
      policies.emplace_back(isa::policy_name(p));
    machine = {
        "machine",
        "a machine config: the root, then the levels below it from the top down",
        {text_key("machine", "the machine's name, printed in stats.json"),
         choice_key("decomposer", policies,
                    "how every node splits the instructions it receives "
                    "(isa/decompose/README.md)")
             .defaults_to("search"),
         choice_key("hazards",
                    std::vector<std::string>(kHazardCheckNames.begin(), kHazardCheckNames.end()),
                    "when a piece's load waits for an earlier piece's write-back: tiles, when "
                    "what it reads shares a byte with what that one writes; spans, when their "
                    "byte spans meet")
             .defaults_to("tiles"),
         mapping_key("root", root, "the main memory and its controller"),
         list_key("levels", level, "the levels below the root, top down; the last is the leaf"),
         mapping_or_file_key("energy", energy, "energy per action and leakage power per component")
             .optional_off("none: the run reports no energy")}};

    memory_energy = {"memory_energy",
                     "the memory's energy per byte",
                     {energy_key("read_per_byte", "per byte read"),
                      energy_key("write_per_byte", "per byte written")}};
    leakage = {"leakage",
               "static power of one node, whatever it does",
               {quantity_key("memory", QuantityKind::power,
                             "the node's memory (the root: the main memory's background power)"),
                quantity_key("logic", QuantityKind::power,
                             "controller, DMA and LFU; at a leaf also its compute units")}};
    root_energy = {"root_energy",
                   "the main memory and the root controller",
                   {mapping_key("memory", memory_energy, "the main memory"),
                    mapping_key("leakage", leakage, "leakage power")}};
    level_energy = {"level_energy",
                    "one level's node",
                    {mapping_key("memory", memory_energy, "the local memory"),
                     energy_key("dma_per_byte", "per byte moved over the link to the parent"),
                     mapping_key("leakage", leakage, "leakage power of one node")}};
    energy = {"energy_table",
              "energy per action and leakage power per component; every key is required",
              {}};
    for (const isa::UnitKindDef& u : isa::unit_kinds()) {
      MappingDecl& table = unit_energy[static_cast<size_t>(u.kind)];
      table = {"energy_" + u.energy_key,
               fmt::format("per action of the {} unit, by input dtype", u.name),
               {}};
      for (isa::DType d : unit_input_dtypes(u.kind)) {
        const std::string name(isa::dtype_name(d));
        table.keys.push_back(energy_key(name, fmt::format("per action on {} inputs", name)));
      }
      energy.keys.push_back(mapping_key(
          u.energy_key, table, fmt::format("per action of the {} unit, by input dtype", u.name)));
    }
    energy.keys.push_back(energy_key("lfu_op", "per element an LFU combines"));
    energy.keys.push_back(mapping_key("root", root_energy, "the main memory and the root"));
    energy.keys.push_back(named_mappings_key(
        "levels", level_energy,
        "one entry per level, by name (entries the machine lacks are checked, then ignored)"));
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

using Json = nlohmann::ordered_json;

const std::vector<QuantityKind>& quantity_kinds() {
  static const std::vector<QuantityKind> kKinds{QuantityKind::bytes,     QuantityKind::bandwidth,
                                                QuantityKind::frequency, QuantityKind::time,
                                                QuantityKind::energy,    QuantityKind::power};
  return kKinds;
}

// The base unit of each kind (its first unit), as "B, B/s, Hz, ps, fJ, nW".
std::string base_units() {
  std::vector<std::string> bases;
  for (QuantityKind q : quantity_kinds()) bases.push_back(quantity_units(q).units.front());
  return fmt::format("{}", fmt::join(bases, ", "));
}

// "a size" -> "size".
std::string bare_noun(const std::string& noun) { return noun.substr(noun.find(' ') + 1); }

// The text of a quantity as the parser accepts it: a non-negative decimal (digits with at most
// one point), then the unit, blanks allowed around both.
std::string quantity_pattern(const ConfigKey& k) {
  return fmt::format("^[ \\t]*{}([0-9]+\\.?[0-9]*|\\.[0-9]+)[ \\t]*({})[ \\t]*$",
                     k.positive ? "(?=[0-9.]*[1-9])" : "",
                     fmt::join(quantity_units(k.unit).units, "|"));
}

Json default_json(const ConfigKey& k) { return scalar_json(k.default_text); }

Json mapping_ref(const MappingDecl& m) { return {{"$ref", "#/$defs/" + m.id}}; }

Json key_schema(const ConfigKey& k) {
  Json s = {{"description", k.description}};
  switch (k.kind) {
    case KeyKind::integer:
      s["type"] = "integer";
      s["minimum"] = k.min;
      s["maximum"] = k.max;
      break;
    case KeyKind::boolean:
      s["type"] = "boolean";
      break;
    case KeyKind::quantity:
      s["type"] = "string";
      s["pattern"] = quantity_pattern(k);
      break;
    case KeyKind::text:
      // fracsim takes any scalar as text, also one YAML reads as a number or boolean.
      s["type"] = Json::array({"string", "number", "boolean"});
      s["minLength"] = 1;
      break;
    case KeyKind::choice:
      s["enum"] = k.choices;
      break;
    case KeyKind::mapping:
      s["$ref"] = mapping_ref(*k.mapping)["$ref"];
      break;
    case KeyKind::list: {
      s["type"] = "array";
      s["minItems"] = 1;
      s["items"] = mapping_ref(*k.mapping);
      std::vector<std::string> leaf_required;
      for (const ConfigKey& e : k.mapping->keys)
        if (e.where == KeyWhere::leaf && e.required()) leaf_required.push_back(e.name);
      if (!leaf_required.empty()) {
        s["contains"] = {{"required", leaf_required}};
        s["minContains"] = 1;
        s["maxContains"] = 1;
      }
      break;
    }
    case KeyKind::named_mappings:
      s["type"] = "object";
      s["additionalProperties"] = mapping_ref(*k.mapping);
      break;
    case KeyKind::mapping_or_file:
      s["oneOf"] =
          Json::array({{{"type", "string"},
                        {"minLength", 1},
                        {"description", "the path of a table file, relative to this config"}},
                       mapping_ref(*k.mapping)});
      break;
  }
  if (k.default_kind == DefaultKind::value) s["default"] = default_json(k);
  return s;
}

// The keys of `m` allowed only at `where`, and those of them required.
std::vector<std::string> keys_where(const MappingDecl& m, KeyWhere where, bool required_only) {
  std::vector<std::string> out;
  for (const ConfigKey& k : m.keys)
    if (k.where == where && (!required_only || k.required())) out.push_back(k.name);
  return out;
}

Json level_variant(const MappingDecl& m, KeyWhere here, KeyWhere other, const char* what) {
  Json v = {{"description", what}};
  const std::vector<std::string> required = keys_where(m, here, true);
  if (!required.empty()) v["required"] = required;
  Json forbidden = Json::array();
  for (const std::string& k : keys_where(m, other, false)) forbidden.push_back({{"required", {k}}});
  if (!forbidden.empty()) v["not"] = {{"anyOf", forbidden}};
  return v;
}

Json mapping_schema(const MappingDecl& m) {
  Json s = {{"description", m.description}, {"type", "object"}};
  Json props = Json::object();
  std::vector<std::string> required;
  bool positional = false;
  for (const ConfigKey& k : m.keys) {
    props[k.name] = key_schema(k);
    if (k.where != KeyWhere::everywhere)
      positional = true;
    else if (k.required())
      required.push_back(k.name);
  }
  s["properties"] = props;
  if (!required.empty()) s["required"] = required;
  s["additionalProperties"] = false;
  if (positional) {
    s["oneOf"] = Json::array(
        {level_variant(m, KeyWhere::above_leaf, KeyWhere::leaf, "a level above the leaf"),
         level_variant(m, KeyWhere::leaf, KeyWhere::above_leaf, "the last level, the leaf")});
  }
  return s;
}

// Every mapping reachable from `m`, each once, in the order a walk from the top meets them,
// with every path it is found at ("levels[i].memory").
struct Found {
  const MappingDecl* decl;
  std::vector<std::string> paths;
};

void walk(const MappingDecl& m, const std::string& path, std::vector<Found>& out) {
  auto it = std::find_if(out.begin(), out.end(), [&](const Found& f) { return f.decl == &m; });
  if (it != out.end()) {
    it->paths.push_back(path);
    return;
  }
  out.push_back({&m, {path}});
  const std::string prefix = path.empty() ? "" : path + ".";
  for (const ConfigKey& k : m.keys) {
    if (!k.mapping) continue;
    std::string sub = prefix + k.name;
    if (k.kind == KeyKind::list) sub += "[i]";
    if (k.kind == KeyKind::named_mappings) sub += ".NAME";
    walk(*k.mapping, sub, out);
  }
}

std::string kind_text(const ConfigKey& k) {
  switch (k.kind) {
    case KeyKind::integer:
      return k.min == INT_MIN ? "integer" : fmt::format("integer >= {}", k.min);
    case KeyKind::boolean:
      return "true or false";
    case KeyKind::quantity:
      return bare_noun(quantity_units(k.unit).noun) + (k.positive ? " > 0" : "");
    case KeyKind::text:
      return "text";
    case KeyKind::choice:
      return join_or(k.choices);
    case KeyKind::mapping:
      return "mapping";
    case KeyKind::list:
      return "list of mappings, at least one";
    case KeyKind::named_mappings:
      return "mapping of names to mappings";
    case KeyKind::mapping_or_file:
      return "mapping, or a table file's path relative to the config";
  }
  throw InternalError("unknown KeyKind");
}

std::string default_text(const ConfigKey& k) {
  std::string d;
  switch (k.default_kind) {
    case DefaultKind::required:
      d = "required";
      break;
    case DefaultKind::value:
      d = fmt::format("`{}`", k.default_text);
      break;
    case DefaultKind::derived:
    case DefaultKind::none:
      d = k.default_text;
      break;
    case DefaultKind::mapping:
      d = "each key's default";
      break;
  }
  if (k.where == KeyWhere::above_leaf)
    d += fmt::format(" on every level but the last; not allowed on the last ({})", k.where_reason);
  if (k.where == KeyWhere::leaf) d += " on the last level; not allowed on others";
  return d;
}

std::string plural(const std::string& noun) {
  return noun.back() == 'y' ? noun.substr(0, noun.size() - 1) + "ies" : noun + "s";
}

}  // namespace

ConfigKey integer_key(std::string name, std::string description) {
  return make_key(std::move(name), KeyKind::integer, std::move(description));
}
ConfigKey boolean_key(std::string name, std::string description) {
  return make_key(std::move(name), KeyKind::boolean, std::move(description));
}
ConfigKey quantity_key(std::string name, QuantityKind unit, std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::quantity, std::move(description));
  k.unit = unit;
  return k;
}
ConfigKey text_key(std::string name, std::string description) {
  return make_key(std::move(name), KeyKind::text, std::move(description));
}
ConfigKey choice_key(std::string name, std::vector<std::string> choices, std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::choice, std::move(description));
  k.choices = std::move(choices);
  return k;
}
ConfigKey mapping_key(std::string name, const MappingDecl& mapping, std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::mapping, std::move(description));
  k.mapping = &mapping;
  return k;
}
ConfigKey list_key(std::string name, const MappingDecl& entry, std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::list, std::move(description));
  k.mapping = &entry;
  return k;
}
ConfigKey named_mappings_key(std::string name, const MappingDecl& entry, std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::named_mappings, std::move(description));
  k.mapping = &entry;
  return k;
}
ConfigKey mapping_or_file_key(std::string name, const MappingDecl& mapping,
                              std::string description) {
  ConfigKey k = make_key(std::move(name), KeyKind::mapping_or_file, std::move(description));
  k.mapping = &mapping;
  return k;
}

const ConfigKey* MappingDecl::find(const std::string& name) const {
  for (const ConfigKey& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> MappingDecl::names_at(KeyWhere position) const {
  std::vector<std::string> out;
  for (const ConfigKey& k : keys)
    if (k.allowed_at(position)) out.push_back(k.name);
  std::sort(out.begin(), out.end());
  return out;
}

const char* key_kind_noun(KeyKind kind) {
  switch (kind) {
    case KeyKind::integer:
      return "an integer";
    case KeyKind::boolean:
      return "a boolean";
    case KeyKind::quantity:
      return "a quantity";
    case KeyKind::text:
      return "a text";
    case KeyKind::choice:
      return "a choice";
    case KeyKind::mapping:
      return "a mapping";
    case KeyKind::list:
      return "a list";
    case KeyKind::named_mappings:
      return "a mapping of names";
    case KeyKind::mapping_or_file:
      return "a mapping or a file";
  }
  throw InternalError("unknown KeyKind");
}

std::string join_or(const std::vector<std::string>& words) {
  if (words.size() <= 1) return words.empty() ? "" : words[0];
  std::vector<std::string> head(words.begin(), words.end() - 1);
  return fmt::format("{} or {}", fmt::join(head, ", "), words.back());
}

const MappingDecl& machine_config_decl() { return tables().machine; }
const MappingDecl& energy_table_decl() { return tables().energy; }

std::string with_config_reference(const std::string& text, const std::string& file) {
  const std::string begin = std::string(kConfigReferenceBegin) + "\n";
  const size_t b = text.find(begin);
  const size_t e = b == std::string::npos ? b : text.find(kConfigReferenceEnd, b);
  if (e == std::string::npos)
    throw ConfigError(fmt::format("{}: no config reference markers ('{}' ... '{}')", file,
                                  kConfigReferenceBegin, kConfigReferenceEnd));
  return text.substr(0, b + begin.size()) + "\n" + config_reference_markdown() + "\n" +
         text.substr(e);
}

Json scalar_json(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  try {
    return scalar_int(YAML::Node(text), "", "");
  } catch (const ConfigError&) {
    return text;
  }
}

Json config_json_schema() {
  std::vector<Found> found;
  walk(machine_config_decl(), "", found);
  Json defs = Json::object();
  for (const Found& f : found) defs[f.decl->id] = mapping_schema(*f.decl);
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "fracsim machine config"},
          {"$comment",
           fmt::format(
               "Generated by `fracsim config schema` from the declarations the parser reads "
               "(sim/config_schema.cpp). fracsim reads a scalar that is an integer (decimal or 0x "
               "hex) as a number and true or false as a boolean, whatever its quotes, and a key "
               "without a value as absent. Checked by fracsim, not by this schema: that the level "
               "with `leaf` is the last one (the schema checks that exactly one has it); that a "
               "clock's period is a whole number of picoseconds; that a quantity is a whole number "
               "of its base unit ({}) and fits 64 bits; that level names are unique; that no level "
               "has more than 2^20 nodes; that an energy table has an entry for every level of the "
               "machine; and the contents of a table file a path names.",
               base_units())},
          {"$ref", "#/$defs/machine"},
          {"$defs", defs}};
}

std::string config_reference_markdown() {
  std::vector<Found> found;
  walk(machine_config_decl(), "", found);
  std::string md;
  for (const Found& f : found) {
    std::vector<std::string> paths;
    for (const std::string& p : f.paths)
      paths.push_back(p.empty() ? "the document" : "`" + p + "`");
    md += fmt::format("**{}**: {}.\n\n", fmt::join(paths, ", "), f.decl->description);
    md += "| key | kind | default | description |\n|---|---|---|---|\n";
    for (const ConfigKey& k : f.decl->keys)
      md += fmt::format("| `{}` | {} | {} | {} |\n", k.name, kind_text(k), default_text(k),
                        k.description);
    md += "\n";
  }
  md += "Quantities carry units:";
  const char* sep = " ";
  for (QuantityKind kind : quantity_kinds()) {
    const QuantityUnits q = quantity_units(kind);
    md += fmt::format("{}{} `{}`", sep, plural(bare_noun(q.noun)), fmt::join(q.units, " "));
    sep = ", ";
  }
  md += fmt::format(
      ". A decimal (`0.5 GHz`) is allowed when the value is a whole number of the base unit "
      "({}).\n",
      base_units());
  return md;
}

}  // namespace fracsim::sim
