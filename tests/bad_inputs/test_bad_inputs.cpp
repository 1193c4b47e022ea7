// The bad-input catalogue (tests/bad_inputs/*.yaml, described in README.md there): every case
// runs the fracsim binary in a fresh folder and must exit 2 with its message fragment, without
// an internal error, and leave the folder as it found it (no output, no temporary, no file
// changed).
#include <doctest/doctest.h>

#include <google/protobuf/text_format.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "isa/encoding.h"
#include "tests/common/cli_runner.h"

namespace fs = std::filesystem;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string with_root(const std::string& s) { return replace_all(s, "{root}", kRoot); }

// Hex digits, whitespace ignored, '#' to the end of a line a comment.
std::string from_hex(const std::string& text) {
  std::string digits;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') comment = false;
    if (c == '#') comment = true;
    if (!comment && std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  }
  REQUIRE_MESSAGE(digits.size() % 2 == 0, "odd number of hex digits");
  std::string bytes;
  for (size_t i = 0; i < digits.size(); i += 2)
    bytes += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return bytes;
}

// The bytes of one entry of a case's `files:` (README.md lists the forms): the text or bytes,
// then the `replace:` pairs applied to them (to the protobuf text of an `onnx:` file, which is
// serialized after).
std::string file_bytes(const YAML::Node& spec, const YAML::Node& templates) {
  if (spec.IsScalar()) return with_root(spec.as<std::string>());
  std::string bytes;
  if (spec["text"]) {
    bytes = with_root(spec["text"].as<std::string>());
  } else if (spec["template"]) {
    const std::string name = spec["template"].as<std::string>();
    REQUIRE_MESSAGE(templates[name], "unknown template " << name);
    bytes = with_root(templates[name].as<std::string>());
  } else if (spec["copy"]) {
    bytes = slurp(kRoot + "/" + spec["copy"].as<std::string>());
    REQUIRE_MESSAGE(!bytes.empty(), "cannot read " << spec["copy"].as<std::string>());
  } else if (spec["hex"]) {
    bytes = from_hex(spec["hex"].as<std::string>());
  } else if (spec["onnx"]) {
    bytes = spec["onnx"].as<std::string>();
  } else {
    FAIL("a file needs text, template, copy, hex or onnx");
  }
  for (const YAML::Node& r : spec["replace"]) {
    const std::string from = with_root(r[0].as<std::string>());
    REQUIRE_MESSAGE(bytes.find(from) != std::string::npos, "replace: no '" << from << "'");
    bytes = replace_all(bytes, from, with_root(r[1].as<std::string>()));
  }
  if (spec["onnx"]) {
    onnx::ModelProto model;
    REQUIRE_MESSAGE(google::protobuf::TextFormat::ParseFromString(bytes, &model),
                    "the onnx text does not parse");
    bytes.clear();
    REQUIRE(model.SerializeToString(&bytes));
  }
  return bytes;
}

// `edit:` entries, applied after `setup:`: truncate to N bytes, overwrite bytes at an offset,
// and recompute a .fbin's trailing FNV-1a checksum.
void apply_edit(const fs::path& dir, const YAML::Node& e) {
  const fs::path path = dir / e["file"].as<std::string>();
  std::string bytes = slurp(path);
  REQUIRE_MESSAGE(!bytes.empty(), "edit: no file " << path);
  if (e["truncate"]) {
    const auto n = e["truncate"].as<int64_t>();
    bytes.resize(static_cast<size_t>(n < 0 ? static_cast<int64_t>(bytes.size()) + n : n));
  }
  for (const YAML::Node& p : e["patch"]) {
    const auto at = p[0].as<size_t>();
    const std::string b = from_hex(p[1].as<std::string>());
    REQUIRE(at + b.size() <= bytes.size());
    bytes.replace(at, b.size(), b);
  }
  if (e["checksum"] && e["checksum"].as<bool>()) {
    REQUIRE(bytes.size() >= 4);
    const uint32_t sum = fracsim::isa::fnv1a32(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               bytes.size() - 4);
    for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + i] = static_cast<char>(sum >> (8 * i));
  }
  spit(path, bytes);
}

// Every file under `dir` with its bytes (folders as entries of their own).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    out[rel] = e.is_directory() ? std::string("<dir>") : slurp(e.path());
  }
  return out;
}

using Outcome = fracsim::testing::CliResult;

// `fracsim ARGS` in `dir`, stdout and stderr together, killed after a minute (a hang is a bug).
Outcome run_in(const fs::path& dir, const std::string& args) {
  return fracsim::testing::run_shell("cd '" + dir.string() + "' && timeout 60 '" + FRACSIM_BINARY + "' " +
                            with_root(args) + " 2>&1");
}

// FRACSIM_BAD_INPUT=TEXT runs only the cases whose name holds TEXT, and prints their output.
const char* only() { return std::getenv("FRACSIM_BAD_INPUT"); }

int run_catalogue(const fs::path& manifest) {
  const YAML::Node doc = YAML::LoadFile(manifest.string());
  const YAML::Node templates = doc["templates"];
  int ran = 0;
  for (const YAML::Node& c : doc["cases"]) {
    const std::string name = c["name"].as<std::string>();
    if (only() && name.find(only()) == std::string::npos) continue;
    CAPTURE(name);
    const fs::path dir = fracsim::testing::temp_dir("fracsim-bad-input");
    for (const auto& f : c["files"])
      spit(dir / f.first.as<std::string>(), file_bytes(f.second, templates));
    for (const YAML::Node& s : c["setup"]) {
      const Outcome r = run_in(dir, s.as<std::string>());
      REQUIRE_MESSAGE(r.code == 0, "setup failed: " << s.as<std::string>() << "\n" << r.out);
    }
    for (const YAML::Node& e : c["edit"]) apply_edit(dir, e);
    const auto before = snapshot(dir);
    const std::string args = c["run"].as<std::string>();
    const Outcome r = run_in(dir, args);
    if (only()) MESSAGE(name << ": exit " << r.code << "\n" << r.out);
    const std::string error = with_root(c["error"].as<std::string>());
    CHECK_MESSAGE(r.code == 2, "fracsim " << args << "\n" << r.out);
    CHECK_MESSAGE(r.out.rfind("error: ", 0) == 0, r.out);
    CHECK_MESSAGE(r.out.find(error) != std::string::npos,
                  "expected '" << error << "' in:\n" << r.out);
    const auto after = snapshot(dir);
    for (const auto& [file, bytes] : after) {
      auto it = before.find(file);
      CHECK_MESSAGE(it != before.end(), "left behind: " << file);
      if (it != before.end()) CHECK_MESSAGE(it->second == bytes, "changed: " << file);
    }
    fs::remove_all(dir);
    ++ran;
  }
  return ran;
}

}  // namespace

TEST_CASE("every case exits 2 with its message and leaves no file behind") {
  std::vector<fs::path> manifests;
  for (const auto& e : fs::directory_iterator(kRoot + "/tests/bad_inputs"))
    if (e.path().extension() == ".yaml") manifests.push_back(e.path());
  std::sort(manifests.begin(), manifests.end());
  REQUIRE(!manifests.empty());
  int ran = 0;
  for (const fs::path& m : manifests) {
    CAPTURE(m.filename().string());
    ran += run_catalogue(m);
  }
  if (!only()) CHECK(ran >= 80);
  MESSAGE(ran << " cases");
}
