// sweep.csv: one row per finished run, from its stats.json (the simulation) and run.json (the
// sweep's record of it), the same for local and Slurm sweeps.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "sim/cli/program_io.h"
#include "sim/cli/sweep.h"

namespace fs = std::filesystem;

namespace fracsim::cli {
namespace {

using Json = nlohmann::json;

// The units of stats.json's `utilization` and the components of `energy_pj.by_component`, in
// the order of their columns.
const std::vector<std::string> kUnits{"matrix", "vector", "sort"};
const std::vector<std::string> kEnergyComponents{"matrix_unit", "vector_unit",    "sort_unit",
                                                 "lfu",         "dram",           "local_memory",
                                                 "dma",         "memory_leakage", "logic_leakage"};

Json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    throw ConfigError(fmt::format("{}: not JSON ({})", path, e.what()));
  }
}

// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) { return fmt::format("{}", v); }

double num(const Json& j) { return j.is_number() ? j.get<double>() : 0.0; }

std::vector<std::string> row_of(const SweepRun& run, const Json& stats, const Json& record) {
  std::vector<std::string> row;
  auto add = [&](std::string s) { row.push_back(std::move(s)); };
  const int64_t cycles = stats.at("cycles").get<int64_t>();
  const double seconds = stats.at("seconds").get<double>();
  add(run.name);
  add(run.config);
  add(stats.at("machine").at("name").get<std::string>());
  add(run.overrides_text());
  add(run.workload);
  add(std::to_string(run.inferences));
  add(run.mode);
  // The effective policy when the machine format has one, else the spec's.
  const Json& config = stats.at("config");
  add(config.contains("decomposer") && config["decomposer"].is_string()
          ? config["decomposer"].get<std::string>()
          : run.policy);
  add(std::to_string(stats.at("machine").at("leaves").get<int64_t>()));
  add(std::to_string(stats.at("machine").at("levels").get<int64_t>()));
  add(std::to_string(cycles));
  add(number(seconds));
  add(number(seconds > 0 ? static_cast<double>(run.inferences) / seconds : 0.0));
  for (const std::string& u : kUnits) add(number(num(stats.at("utilization").value(u, Json()))));
  double bounds = 0;
  for (const Json& l : stats.at("layers")) bounds += num(l.at("bound"));
  add(number(cycles > 0 ? bounds / static_cast<double>(cycles) : 0.0));
  // Bytes per level and where the node-cycles of the levels below the root go.
  std::vector<std::string> bytes;
  double load = 0, compute = 0, reduce = 0, writeback = 0, hazard = 0, ops = 0;
  const Json& levels = stats.at("levels");
  for (size_t i = 0; i < levels.size(); ++i) {
    const Json& t = levels[i].at("totals");
    ops += num(t.at("matrix_ops")) + num(t.at("vector_ops")) + num(t.at("sort_ops"));
    if (i == 0) continue;  // the root: its memory is the main memory, its EX the whole run
    bytes.push_back(
        fmt::format("{}={}", levels[i].at("name").get<std::string>(),
                    t.at("load_bytes").get<int64_t>() + t.at("store_bytes").get<int64_t>()));
    load += num(t.at("load_cycles"));
    if (i + 1 == levels.size()) compute += num(t.at("execute_cycles"));
    reduce += num(t.at("reduce_cycles"));
    writeback += num(t.at("writeback_cycles"));
    hazard += num(t.at("hazard_cycles"));
  }
  add(fmt::format("{}", fmt::join(bytes, ";")));
  const double busy = load + compute + reduce + writeback + hazard;
  for (double part : {load, compute, reduce, writeback, hazard})
    add(number(busy > 0 ? part / busy : 0.0));
  const Json& energy = stats.at("energy_pj");
  const bool priced = energy.value("configured", false);
  add(priced ? number(num(energy.at("total"))) : "");
  for (const std::string& c : kEnergyComponents)
    add(priced ? number(num(energy.at("by_component").value(c, Json()))) : "");
  add(fmt::format("{}", static_cast<int64_t>(ops)));
  const double joules = priced ? num(energy.at("total")) * 1e-12 : 0.0;
  add(joules > 0 ? number(ops / joules) : "");
  add(number(num(record.at("wall_seconds"))));
  return row;
}

}  // namespace

const std::vector<std::string>& sweep_csv_columns() {
  static const std::vector<std::string> kColumns = [] {
    std::vector<std::string> c{"run",    "config",  "machine",         "overrides", "workload",
                               "batch",  "mode",    "policy",          "leaves",    "levels",
                               "cycles", "seconds", "inferences_per_s"};
    for (const std::string& u : kUnits) c.push_back("util_" + u);
    for (const char* k : {"attained", "bytes_by_level", "load_share", "compute_share",
                          "reduce_share", "writeback_share", "hazard_share", "energy_pj"})
      c.emplace_back(k);
    for (const std::string& e : kEnergyComponents) c.push_back("energy_" + e + "_pj");
    for (const char* k : {"ops", "ops_per_j", "wall_seconds"}) c.emplace_back(k);
    return c;
  }();
  return kColumns;
}

std::vector<std::string> gather_sweep(const std::string& dir, const SweepSpec& spec) {
  std::string csv = fmt::format("{}\n", fmt::join(sweep_csv_columns(), ","));
  std::vector<std::string> missing;
  for (const SweepRun& run : spec.runs) {
    if (!run_done(dir, run)) {
      missing.push_back(run.name);
      continue;
    }
    const fs::path d = run_dir(dir, run);
    std::vector<std::string> row;
    try {
      row =
          row_of(run, read_json((d / "stats.json").string()), read_json((d / "run.json").string()));
    } catch (const Json::exception& e) {
      throw ConfigError(fmt::format("{}: unexpected stats.json ({})", d.string(), e.what()));
    }
    for (std::string& f : row) f = csv_field(f);
    csv += fmt::format("{}\n", fmt::join(row, ","));
  }
  write_file_atomically((fs::path(dir) / "sweep.csv").string(), csv);
  return missing;
}

}  // namespace fracsim::cli
