// Strict reading of YAML mappings for every input format of fracsim (op definitions, workloads,
// machine configs): each key is declared where it is read, unknown keys are rejected, and every
// error names the file, the line and the key path ("levels[1].link.bandwidth").
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "isa/error.h"

namespace fracsim {

// Parses a whole file or string; syntax errors become ConfigError with file and line.
YAML::Node load_yaml_file(const std::string& path);
YAML::Node load_yaml_string(const std::string& text, const std::string& name);

// 1-based line of a node (0 when unknown).
int yaml_line(const YAML::Node& node);

class YamlMap {
 public:
  // `path` is the key path of this mapping ("" for the document root).
  YamlMap(YAML::Node node, std::string file, std::string path);

  bool has(const std::string& key) const;
  // The raw child; marks the key as read. Throws when missing.
  YAML::Node require(const std::string& key);
  std::optional<YAML::Node> get(const std::string& key);
  YamlMap require_map(const std::string& key);
  std::optional<YamlMap> get_map(const std::string& key);

  std::string require_string(const std::string& key);
  std::string get_string(const std::string& key, const std::string& fallback);
  int64_t require_int(const std::string& key);
  int64_t get_int(const std::string& key, int64_t fallback);
  bool get_bool(const std::string& key, bool fallback);

  // Rejects every key that was not read. Call after reading all declared keys.
  void finish() const;

  // Helpers for messages about this mapping or one of its keys.
  ConfigError error(const std::string& key, const std::string& message) const;
  ConfigError error_at(const YAML::Node& node, const std::string& key,
                       const std::string& message) const;
  std::string key_path(const std::string& key) const;
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  int line() const { return yaml_line(node_); }
  const YAML::Node& node() const { return node_; }
  // The keys in document order.
  std::vector<std::string> keys() const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
  mutable std::set<std::string> read_;
};

// Scalar conversions with errors naming file, line and key.
std::string scalar_string(const YAML::Node& n, const std::string& file, const std::string& key);
int64_t scalar_int(const YAML::Node& n, const std::string& file, const std::string& key);

}  // namespace fracsim
