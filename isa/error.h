// The two error types of fracsim (see STYLE.md): ConfigError for anything the user gave us
// (config, workload, program, flags) and InternalError for simulator bugs. Libraries throw,
// only the CLI turns them into exit codes (2 and 3).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace fracsim {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // An error about one key of an input file: `key` is its path ("levels[1].fanout", "" for
  // none) and `detail` the message without the place, so that a caller that put the key there
  // (a --set override) can say so.
  ConfigError(const std::string& what, std::string key, std::string detail)
      : std::runtime_error(what), key_(std::move(key)), detail_(std::move(detail)) {}

  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string key_;
  std::string detail_;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// "file:line: key: message", the one shape every input error takes. line <= 0 omits the line.
inline ConfigError config_error_at(const std::string& file, int line, const std::string& key,
                                   const std::string& message) {
  std::string where = file;
  if (line > 0) where += fmt::format(":{}", line);
  if (key.empty()) return ConfigError(fmt::format("{}: {}", where, message), key, message);
  return ConfigError(fmt::format("{}: {}: {}", where, key, message), key, message);
}

#define FRACSIM_ASSERT(cond, ...)                                                              \
  do {                                                                                         \
    if (!(cond))                                                                               \
      throw ::fracsim::InternalError(fmt::format("{}:{}: assertion '{}' failed: {}", __FILE__, \
                                                 __LINE__, #cond, fmt::format(__VA_ARGS__)));  \
  } while (0)

}  // namespace fracsim
