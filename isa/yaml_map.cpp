#include "isa/yaml_map.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fracsim {
namespace {

// yaml-cpp keeps both entries of a key given twice and lookups see the first: refuse the file
// rather than silently ignore one of the two values.
void check_unique_keys(const YAML::Node& node, const std::string& name) {
  if (node.IsSequence()) {
    for (const YAML::Node& child : node) check_unique_keys(child, name);
  } else if (node.IsMap()) {
    std::map<std::string, int> seen;  // key -> line
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) {
        const int line = kv.first.Mark().line + 1;
        auto [it, fresh] = seen.emplace(kv.first.Scalar(), line);
        if (!fresh)
          throw config_error_at(name, line, kv.first.Scalar(),
                                fmt::format("duplicate key (first given at line {})", it->second));
      }
      check_unique_keys(kv.second, name);
    }
  }
}

}  // namespace

YAML::Node load_yaml_string(const std::string& text, const std::string& name) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw config_error_at(name, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  check_unique_keys(n, name);
  return n;
}

YAML::Node load_yaml_file(const std::string& path) {
  std::error_code ec;
  std::ifstream in(path);
  if (!in || std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{}: cannot open file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  YAML::Node n = load_yaml_string(ss.str(), path);
  if (!n.IsMap()) throw config_error_at(path, 1, "", "expected a YAML mapping at the top level");
  return n;
}

int yaml_line(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  return node.Mark().line + 1;
}

YamlMap::YamlMap(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) {
    throw config_error_at(file_, yaml_line(node_), path_.empty() ? "(document)" : path_,
                          "expected a mapping of keys");
  }
}

std::string YamlMap::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

ConfigError YamlMap::error(const std::string& key, const std::string& message) const {
  const YAML::Node& cnode = node_;
  YAML::Node child = cnode[key];
  int ln = child.IsDefined() ? yaml_line(child) : line();
  return config_error_at(file_, ln, key_path(key), message);
}

ConfigError YamlMap::error_at(const YAML::Node& node, const std::string& key,
                              const std::string& message) const {
  return config_error_at(file_, yaml_line(node) > 0 ? yaml_line(node) : line(), key_path(key),
                         message);
}

bool YamlMap::has(const std::string& key) const {
  const YAML::Node& cnode = node_;
  return cnode[key].IsDefined();
}

std::optional<YAML::Node> YamlMap::get(const std::string& key) {
  read_.insert(key);
  const YAML::Node& cnode = node_;
  YAML::Node child = cnode[key];
  if (!child.IsDefined() || child.IsNull()) return std::nullopt;
  return child;
}

YAML::Node YamlMap::require(const std::string& key) {
  auto child = get(key);
  if (!child) {
    throw config_error_at(file_, line(), key_path(key), "missing required key");
  }
  return *child;
}

YamlMap YamlMap::require_map(const std::string& key) {
  return YamlMap(require(key), file_, key_path(key));
}

std::optional<YamlMap> YamlMap::get_map(const std::string& key) {
  auto child = get(key);
  if (!child) return std::nullopt;
  return YamlMap(*child, file_, key_path(key));
}

std::string scalar_string(const YAML::Node& n, const std::string& file, const std::string& key) {
  if (!n.IsScalar())
    throw config_error_at(file, yaml_line(n), key, "expected a single value, got a list or map");
  return n.Scalar();
}

int64_t scalar_int(const YAML::Node& n, const std::string& file, const std::string& key) {
  std::string s = scalar_string(n, file, key);
  errno = 0;
  char* end = nullptr;
  // YAML 1.2: "010" is ten, "0x10" sixteen.
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  long long v = std::strtoll(s.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw config_error_at(file, yaml_line(n), key, fmt::format("expected an integer, got '{}'", s));
  return v;
}

std::string YamlMap::require_string(const std::string& key) {
  return scalar_string(require(key), file_, key_path(key));
}

std::string YamlMap::get_string(const std::string& key, const std::string& fallback) {
  auto n = get(key);
  return n ? scalar_string(*n, file_, key_path(key)) : fallback;
}

int64_t YamlMap::require_int(const std::string& key) {
  return scalar_int(require(key), file_, key_path(key));
}

int64_t YamlMap::get_int(const std::string& key, int64_t fallback) {
  auto n = get(key);
  return n ? scalar_int(*n, file_, key_path(key)) : fallback;
}

bool YamlMap::get_bool(const std::string& key, bool fallback) {
  auto n = get(key);
  if (!n) return fallback;
  std::string s = scalar_string(*n, file_, key_path(key));
  if (s == "true") return true;
  if (s == "false") return false;
  throw error(key, fmt::format("expected true or false, got '{}'", s));
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

void YamlMap::finish() const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (read_.count(key)) continue;
    std::vector<std::string> known(read_.begin(), read_.end());
    throw config_error_at(file_, yaml_line(kv.first), key_path(key),
                          fmt::format("unknown key (expected one of: {})", fmt::join(known, ", ")));
  }
}

}  // namespace fracsim
