// The sweep spec (sweep.yaml) and the manifest (DIR/sweep.json).
//
//   sweep: NAME
//   runs:                     # blocks, one after another; each the cross product of its axes
//     - machine: CONFIG or [CONFIG, ...]      # required; paths relative to the spec's folder
//       workload: PROGRAM or [PROGRAM, ...]   # required; likewise
//       batch: N or [N, ...]                  # optional: --batch values (none: as written)
//       mode: timing|functional or a list     # optional, default timing
//       policy: P or [P, ...]                 # optional: each a --set decomposer=P
//       set: {KEY: VALUE or [VALUE, ...], ...}  # optional: --set KEY=VALUE, crossed
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/batch.h"
#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/cli/program_io.h"
#include "sim/cli/sweep.h"
#include "sim/config_override.h"

namespace fs = std::filesystem;

namespace fracsim::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kManifestFormat = "fracsim-sweep/1";

// An axis: one scalar or a non-empty list of scalars; each value with its line.
std::vector<std::pair<std::string, int>> axis(YamlMap& block, const std::string& key) {
  std::vector<std::pair<std::string, int>> values;
  const std::optional<YAML::Node> node = block.get(key);
  if (!node) return values;
  if (node->IsSequence()) {
    if (node->size() == 0) throw block.error(key, "must list at least one value");
    for (size_t i = 0; i < node->size(); ++i)
      values.emplace_back(
          scalar_string((*node)[i], block.file(), fmt::format("{}[{}]", block.key_path(key), i)),
          yaml_line((*node)[i]));
  } else {
    values.emplace_back(scalar_string(*node, block.file(), block.key_path(key)), yaml_line(*node));
  }
  for (const auto& [v, line] : values)
    if (v.empty()) throw config_error_at(block.file(), line, block.key_path(key), "empty value");
  return values;
}

std::string sanitized(const std::string& s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

// FNV-1a: a run directory's name must not change between versions of fracsim.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// CONFIG-WORKLOAD[-bN]-MODE[-POLICY]-HASH: readable, and unique through the hash of every
// parameter as the spec writes it.
std::string run_name(const SweepRun& r) {
  std::string key =
      fmt::format("config={}\nworkload={}\nbatch={}\nmode={}\npolicy={}\n", r.config, r.workload,
                  r.batch ? std::to_string(*r.batch) : "", r.mode, r.policy);
  for (const auto& [k, v] : r.sets) key += fmt::format("set {}={}\n", k, v);
  std::string name = sanitized(fs::path(r.config).stem().string()) + "-" +
                     sanitized(fs::path(r.workload).stem().string());
  if (r.batch) name += fmt::format("-b{}", *r.batch);
  name += "-" + r.mode;
  if (!r.policy.empty()) name += "-" + sanitized(r.policy);
  return name + fmt::format("-{:010x}", fnv1a(key) & 0xffffffffffULL);
}

// The samples one run of the workload computes: the leading extent of the inputs that carry the
// batch (compiler/batch.h), 1 if none does.
int64_t written_batch(const compiler::Workload& w) {
  const std::set<std::string> weights = compiler::weight_inputs(w);
  for (const compiler::TensorDesc& t : w.inputs)
    if (!w.weights.count(t.name) && !weights.count(t.name) && !t.shape.empty()) return t.shape[0];
  return 1;
}

struct Block {
  int line = 0;
  std::string path;  // runs[i]
  std::vector<std::pair<std::string, int>> machines, workloads, batches, modes, policies;
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, int>>>> sets;
};

Block read_block(YamlMap& m, size_t index) {
  Block b;
  b.line = m.line();
  b.path = fmt::format("runs[{}]", index);
  b.machines = axis(m, "machine");
  if (b.machines.empty()) m.require("machine");
  b.workloads = axis(m, "workload");
  if (b.workloads.empty()) m.require("workload");
  b.batches = axis(m, "batch");
  for (const auto& [v, line] : b.batches) {
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0' || n <= 0 || v[0] == '+')
      throw config_error_at(m.file(), line, m.key_path("batch"),
                            fmt::format("expected a positive integer, got '{}'", v));
  }
  b.modes = axis(m, "mode");
  for (const auto& [v, line] : b.modes)
    if (v != "timing" && v != "functional")
      throw config_error_at(m.file(), line, m.key_path("mode"),
                            fmt::format("expected timing or functional, got '{}'", v));
  if (b.modes.empty()) b.modes.emplace_back("timing", m.line());
  b.policies = axis(m, "policy");
  if (auto set = m.get_map("set")) {
    for (const std::string& key : set->keys()) {
      if (key == "decomposer")
        throw set->error(key, "give decomposer policies with the block's `policy` key");
      b.sets.emplace_back(key, axis(*set, key));
    }
    set->finish();
  }
  m.finish();
  return b;
}

// Where a run comes from in the spec, for its errors.
struct Origin {
  const Block* block = nullptr;
  size_t index = 0;                                               // of the block
  int machine = 0, workload = 0, batch = 0, policy = 0, set = 0;  // lines of its values
};

// The runs of a block, machine outermost, then workload, batch, mode, policy and each set key
// in the order written.
void expand(const Block& b, size_t index, const fs::path& base, std::vector<SweepRun>& out,
            std::vector<Origin>& origins) {
  const std::vector<std::pair<std::string, int>> none{{"", 0}};
  const auto& batches = b.batches.empty() ? none : b.batches;
  const auto& policies = b.policies.empty() ? none : b.policies;
  for (const auto& [machine, ml] : b.machines)
    for (const auto& [workload, wl] : b.workloads)
      for (const auto& [batch, bl] : batches)
        for (const auto& [mode, mol] : b.modes)
          for (const auto& [policy, pl] : policies) {
            // The cross product of the set keys, the last key fastest.
            std::vector<size_t> at(b.sets.size(), 0);
            while (true) {
              SweepRun r;
              r.config = machine;
              r.config_path = fs::absolute(base / machine).lexically_normal().string();
              r.workload = workload;
              r.workload_path = fs::absolute(base / workload).lexically_normal().string();
              if (!batch.empty()) r.batch = std::stoll(batch);
              r.mode = mode;
              r.policy = policy;
              for (size_t k = 0; k < b.sets.size(); ++k)
                r.sets.emplace_back(b.sets[k].first, b.sets[k].second[at[k]].first);
              r.name = run_name(r);
              out.push_back(std::move(r));
              Origin o{&b, index, ml, wl, bl, pl, b.line};
              for (size_t k = 0; k < b.sets.size(); ++k) o.set = b.sets[k].second[at[k]].second;
              origins.push_back(o);
              size_t k = b.sets.size();
              while (k > 0 && ++at[k - 1] == b.sets[k - 1].second.size()) at[--k] = 0;
              if (k == 0) break;
            }
          }
}

// Each machine config with each of its runs' overrides, and each workload at each batch, once
// (compiled, as the run will: a batch the workload cannot take is refused here); an error names
// the value of the first run that asks for it.
void validate_runs(const std::string& file, const std::vector<Origin>& origins,
                   std::vector<SweepRun>& runs) {
  std::set<std::string> checked;
  std::map<std::string, int64_t> inferences;
  const isa::OpTable& ops = isa::OpTable::builtin();
  for (size_t i = 0; i < runs.size(); ++i) {
    SweepRun& r = runs[i];
    const Origin& o = origins[i];
    auto fail = [&](int line, const std::string& key, const std::string& message) {
      return config_error_at(file, line, fmt::format("runs[{}].{}", o.index, key), message);
    };
    std::vector<sim::ConfigOverride> sets;
    for (const auto& [k, v] : r.sets) sets.push_back(sim::parse_override(k + "=" + v));
    const std::string machine_key = r.config_path + "\n" + r.overrides_text();
    if (checked.insert(machine_key).second) {
      try {
        sim::load_machine_spec(r.config_path, sets);
      } catch (const ConfigError& e) {
        if (r.sets.empty()) throw fail(o.machine, "machine", e.what());
        throw fail(o.set, "set", e.what());
      }
    }
    if (!r.policy.empty() && checked.insert(machine_key + "\npolicy=" + r.policy).second) {
      sets.push_back(sim::parse_override("decomposer=" + r.policy));
      try {
        sim::load_machine_spec(r.config_path, sets);
      } catch (const ConfigError& e) {
        throw fail(o.policy, "policy", fmt::format("'{}': {}", r.policy, e.what()));
      }
    }
    const std::string workload_key =
        r.workload_path + "\n" + (r.batch ? std::to_string(*r.batch) : "");
    if (!inferences.count(workload_key)) {
      if (!fs::exists(r.workload_path))
        throw fail(o.workload, "workload", fmt::format("{}: no such file", r.workload));
      compiler::CompileOptions options;
      options.batch = r.batch;
      int64_t n = 1;
      try {
        load_program(r.workload_path, ops, options);
        if (r.batch)
          n = *r.batch;
        else if (is_workload_path(r.workload_path))
          n = written_batch(load_workload_file(r.workload_path));
      } catch (const ConfigError& e) {
        if (r.batch) throw fail(o.batch, "batch", e.what());
        throw fail(o.workload, "workload", e.what());
      }
      inferences[workload_key] = n;
    }
    r.inferences = inferences[workload_key];
  }
}

}  // namespace

std::vector<std::string> SweepRun::overrides() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : sets) out.push_back(k + "=" + v);
  if (!policy.empty()) out.push_back("decomposer=" + policy);
  return out;
}

std::string SweepRun::overrides_text() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : sets) out.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(out, "; "));
}

SweepSpec load_sweep_spec(const std::string& path) {
  SweepSpec spec;
  spec.file = path;
  YamlMap top(load_yaml_file(path), path, "");
  spec.name = top.require_string("sweep");
  const YAML::Node blocks = top.require("runs");
  if (!blocks.IsSequence() || blocks.size() == 0)
    throw top.error("runs", "expected a list of run blocks (each a mapping of axes)");
  top.finish();
  const fs::path base = fs::path(path).parent_path();
  std::vector<Block> parsed;
  for (size_t i = 0; i < blocks.size(); ++i) {
    YamlMap m(blocks[i], path, fmt::format("runs[{}]", i));
    parsed.push_back(read_block(m, i));
  }
  std::vector<Origin> origins;
  for (size_t i = 0; i < parsed.size(); ++i) expand(parsed[i], i, base, spec.runs, origins);
  std::map<std::string, size_t> seen;
  for (size_t k = 0; k < spec.runs.size(); ++k) {
    auto [it, fresh] = seen.emplace(spec.runs[k].name, origins[k].index);
    if (!fresh)
      throw config_error_at(
          path, origins[k].block->line, fmt::format("runs[{}]", origins[k].index),
          fmt::format("run {} again (runs[{}] has it already)", spec.runs[k].name, it->second));
  }
  validate_runs(path, origins, spec.runs);
  return spec;
}

nlohmann::ordered_json sweep_manifest(const SweepSpec& spec) {
  Json runs = Json::array();
  for (const SweepRun& r : spec.runs) {
    Json sets = Json::array();
    for (const auto& [k, v] : r.sets) sets.push_back({{"key", k}, {"value", v}});
    runs.push_back({{"name", r.name},
                    {"config", r.config},
                    {"config_path", r.config_path},
                    {"workload", r.workload},
                    {"workload_path", r.workload_path},
                    {"batch", r.batch ? Json(*r.batch) : Json()},
                    {"inferences", r.inferences},
                    {"mode", r.mode},
                    {"policy", r.policy},
                    {"set", sets}});
  }
  return {{"format", kManifestFormat},
          {"sweep", spec.name},
          {"spec", fs::absolute(spec.file).lexically_normal().string()},
          {"runs", runs}};
}

void write_sweep_manifest(const std::string& dir, const SweepSpec& spec) {
  write_file_atomically((fs::path(dir) / "sweep.json").string(),
                        sweep_manifest(spec).dump(2) + "\n");
}

SweepSpec read_sweep_manifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / "sweep.json").string();
  std::ifstream in(path);
  if (!in)
    throw ConfigError(
        fmt::format("{}: no sweep here (no sweep.json; 'fracsim sweep SPEC --out "
                    "{}' makes one)",
                    dir, dir));
  SweepSpec spec;
  try {
    const Json j = Json::parse(in);
    if (j.at("format") != kManifestFormat)
      throw ConfigError(fmt::format("{}: format '{}', expected '{}'", path,
                                    j.at("format").get<std::string>(), kManifestFormat));
    spec.name = j.at("sweep").get<std::string>();
    spec.file = j.at("spec").get<std::string>();
    for (const Json& r : j.at("runs")) {
      SweepRun run;
      run.name = r.at("name").get<std::string>();
      run.config = r.at("config").get<std::string>();
      run.config_path = r.at("config_path").get<std::string>();
      run.workload = r.at("workload").get<std::string>();
      run.workload_path = r.at("workload_path").get<std::string>();
      if (!r.at("batch").is_null()) run.batch = r.at("batch").get<int64_t>();
      run.inferences = r.at("inferences").get<int64_t>();
      run.mode = r.at("mode").get<std::string>();
      run.policy = r.at("policy").get<std::string>();
      for (const Json& s : r.at("set"))
        run.sets.emplace_back(s.at("key").get<std::string>(), s.at("value").get<std::string>());
      spec.runs.push_back(std::move(run));
    }
  } catch (const Json::exception& e) {
    throw ConfigError(fmt::format("{}: not a sweep manifest ({})", path, e.what()));
  }
  return spec;
}

std::string run_dir(const std::string& dir, const SweepRun& run) {
  return (fs::path(dir) / "runs" / run.name).string();
}

bool run_done(const std::string& dir, const SweepRun& run) {
  return fs::exists(fs::path(run_dir(dir, run)) / "stats.json");
}

}  // namespace fracsim::cli
