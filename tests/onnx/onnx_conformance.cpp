// ONNX's backend node tests through fracsim: each case directory holds model.onnx and
// test_data_set_0/{input,output}_*.pb. A case is imported with its inputs as given values,
// compiled, run in functional mode on a machine config (configs/tiny.yaml by default), and each
// output read from the simulated root memory is compared with the expected one: float32 within
// |got - expected| <= atol + rtol * |expected| (rtol 1e-3, atol 1e-7, the suite's own, computed in
// double, for float16 and double alike; NaN equals NaN), integers exactly (fracsim's i32
// indices against ONNX's int64).
//
// usage: onnx_conformance [-m CONFIG] [--expected LIST] [--only LIST] [DIR...]
//   -m CONFIG  the machine: a shipped config's name (tiny, f1, f100, scale/leaves-0004) or a
//              YAML file (default tiny; --config FILE is the same). A case whose program needs
//              more root memory than that machine has runs on the smallest shipped config (by
//              root-memory capacity, then leaves) that holds it, and its line ends
//              "(on NAME: needs N bytes of root memory)".
//   DIR      a case directory or a directory of them (default: the libonnx-testdata node tests)
//   --expected LIST  case names that must pass: exit 1 naming each one that does not
//   --only LIST      run only the cases named in LIST
// Prints "pass NAME", "fail NAME: ...", "unsupported NAME: <the importer's reason>" per case,
// then a total line.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/onnx_tensor.h"
#include "isa/error.h"
#include "isa/reference.h"
#include "sim/machine.h"

namespace fs = std::filesystem;
using namespace fracsim;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
const char* kDefaultDir = "/usr/share/libonnx-testdata/data/node";

onnx::TensorProto read_tensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto t;
  if (!in || !t.ParseFromIstream(&in))
    throw ConfigError(fmt::format("{}: not a TensorProto", path.string()));
  return t;
}

// Integers are compared exactly, over the union of int64 and uint64.
__extension__ using Wide = __int128;

// The expected elements of an output: floats (float, float16, double) widened to double,
// integers exactly.
struct Expected {
  bool is_float = false;
  std::vector<double> reals;
  std::vector<Wide> ints;
  size_t size() const { return is_float ? reals.size() : ints.size(); }
};

// The integer of `size` little-endian bytes at `p`, sign- or zero-extended.
Wide integer_at(const uint8_t* p, uint32_t size, bool is_unsigned) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, size);
  if (is_unsigned) return static_cast<Wide>(bits);
  const int shift = 64 - 8 * static_cast<int>(size);
  return static_cast<Wide>(static_cast<int64_t>(bits << shift) >> shift);
}

// nullopt for a dtype fracsim has no counterpart of.
std::optional<Expected> expected_values(const onnx::TensorProto& t) {
  const auto dt = compiler::dtype_from_onnx(t.data_type());
  if (!dt || *dt == isa::DType::bf16) return std::nullopt;
  const std::vector<uint8_t> b = compiler::tensor_bytes(t, *dt);
  const uint32_t size = isa::dtype_size(*dt);
  Expected out;
  out.is_float = !isa::is_integer(*dt);
  for (size_t i = 0; i < b.size(); i += size) {
    if (*dt == isa::DType::f32) {
      float f;
      std::memcpy(&f, b.data() + i, 4);
      out.reals.push_back(f);
    } else if (*dt == isa::DType::f16) {
      uint16_t h;
      std::memcpy(&h, b.data() + i, 2);
      out.reals.push_back(isa::half_to_double(h));
    } else if (*dt == isa::DType::f64) {
      double d;
      std::memcpy(&d, b.data() + i, 8);
      out.reals.push_back(d);
    } else {
      out.ints.push_back(integer_at(b.data() + i, size, isa::is_unsigned(*dt)));
    }
  }
  return out;
}

std::string wide_str(Wide v) {
  if (v < 0) return "-" + wide_str(-v);
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return s;
}

struct Outcome {
  std::string status;  // pass, fail, unsupported
  std::string detail;
};

Outcome check_case(const onnx::ModelProto& model, const fs::path& data, const isa::Program& program,
                   const sim::MachineSpec& spec);

std::string number(double v) { return fmt::format("{:.9g}", v); }

// The shipped configs (configs/*.yaml and configs/scale/*.yaml), smallest root memory first.
struct Shipped {
  std::string name;
  sim::MachineSpec spec;
};
const std::vector<Shipped>& shipped_configs() {
  static const std::vector<Shipped> all = [] {
    std::vector<Shipped> out;
    const fs::path root = fs::path(FRACSIM_SOURCE_DIR) / "configs";
    for (const fs::path& dir : {root, root / "scale"})
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") {
          const std::string name = fs::relative(e.path(), root).replace_extension().string();
          out.push_back({name, sim::load_machine_spec(e.path().string())});
        }
    std::sort(out.begin(), out.end(), [](const Shipped& a, const Shipped& b) {
      const uint64_t ca = a.spec.root.memory.capacity, cb = b.spec.root.memory.capacity;
      if (ca != cb) return ca < cb;
      if (a.spec.leaves() != b.spec.leaves()) return a.spec.leaves() < b.spec.leaves();
      return a.name < b.name;
    });
    return out;
  }();
  return all;
}

Outcome run_case(const fs::path& dir, const sim::MachineSpec& machine) {
  const fs::path model_path = dir / "model.onnx";
  std::ifstream in(model_path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in))
    return {"unsupported", fmt::format("{}: not an ONNX model", model_path.string())};
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> inputs;
  for (const auto& v : model.graph().input())
    if (!initializers.count(v.name())) inputs.push_back(v.name());
  const fs::path data = dir / "test_data_set_0";
  std::map<std::string, onnx::TensorProto> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path p = data / fmt::format("input_{}.pb", i);
    if (fs::exists(p)) values[inputs[i]] = read_tensor(p);
  }
  const isa::OpTable& ops = isa::OpTable::builtin();
  isa::Program program;
  try {
    program = compiler::compile(compiler::load_onnx(model_path.string(), values), ops);
  } catch (const ConfigError& e) {
    return {"unsupported", e.what()};
  }
  const sim::MachineSpec* chosen = &machine;
  std::string on;
  if (program.footprint > machine.root.memory.capacity) {
    chosen = nullptr;
    for (const Shipped& c : shipped_configs())
      if (c.spec.root.memory.capacity >= program.footprint) {
        chosen = &c.spec;
        on = fmt::format("(on {}: needs {} bytes of root memory)", c.name, program.footprint);
        break;
      }
    if (!chosen)
      return {"unsupported", fmt::format("needs {} bytes of root memory, more than any shipped "
                                         "config has",
                                         program.footprint)};
  }
  const sim::MachineSpec& spec = *chosen;
  Outcome result = check_case(model, data, program, spec);
  if (!on.empty()) result.detail = result.detail.empty() ? on : result.detail + " " + on;
  return result;
}

Outcome check_case(const onnx::ModelProto& model, const fs::path& data, const isa::Program& program,
                   const sim::MachineSpec& spec) {
  const isa::OpTable& ops = isa::OpTable::builtin();
  sim::RunResult run;
  try {
    run = sim::simulate(spec, ops, program, sim::Mode::functional);
  } catch (const ConfigError& e) {
    return {"unsupported", e.what()};
  }
  isa::MemoryView mem{run.memory.data(), run.memory.size()};
  for (int o = 0; o < model.graph().output_size(); ++o) {
    const std::string& name = model.graph().output(o).name();
    const onnx::TensorProto want = read_tensor(data / fmt::format("output_{}.pb", o));
    auto expect = expected_values(want);
    if (!expect)
      return {"unsupported", fmt::format("output '{}' has dtype {}, which the ISA lacks", name,
                                         compiler::onnx_type_name(want.data_type()))};
    const isa::Symbol* sym = nullptr;
    for (const isa::Symbol& s : program.symbols)
      if (s.role == isa::SymbolRole::output && s.name == name) sym = &s;
    if (!sym) return {"fail", fmt::format("output '{}' is not in the program", name)};
    std::vector<int64_t> offsets;
    isa::for_each_offset(sym->tensor, [&](int64_t off) { offsets.push_back(off); });
    if (offsets.size() != expect->size())
      return {"fail", fmt::format("output '{}' has {} elements, expected {}", name, offsets.size(),
                                  expect->size())};
    if (expect->is_float == isa::is_integer(sym->tensor.dtype))
      return {"fail", fmt::format("output '{}' is {} where ONNX has {}", name,
                                  isa::dtype_name(sym->tensor.dtype),
                                  compiler::onnx_type_name(want.data_type()))};
    const uint32_t size = isa::dtype_size(sym->tensor.dtype);
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (expect->is_float) {
        const double got = isa::load_element(sym->tensor, offsets[i], mem), e = expect->reals[i];
        const bool ok = std::isnan(e)
                            ? std::isnan(got)
                            : got == e || std::fabs(got - e) <= kAtol + kRtol * std::fabs(e);
        if (!ok)
          return {"fail", fmt::format("output '{}' element {}: expected {}, got {}", name, i,
                                      number(e), number(got))};
      } else {
        const Wide got = integer_at(run.memory.data() + sym->tensor.address + offsets[i] * size,
                                    size, isa::is_unsigned(sym->tensor.dtype));
        if (got != expect->ints[i])
          return {"fail", fmt::format("output '{}' element {}: expected {}, got {}", name, i,
                                      wide_str(expect->ints[i]), wide_str(got))};
      }
    }
  }
  return {"pass", ""};
}

std::set<std::string> read_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') names.insert(line);
  }
  return names;
}

int run_all(int argc, char** argv) {
  std::string config = std::string(FRACSIM_SOURCE_DIR) + "/configs/tiny.yaml";
  std::optional<std::set<std::string>> expected, only;
  std::vector<fs::path> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-m" || a == "--config" || a == "--expected" || a == "--only") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "-m" || a == "--config")
        config = fs::exists(v) ? v : std::string(FRACSIM_SOURCE_DIR) + "/configs/" + v + ".yaml";
      if (a == "--expected") expected = read_list(v);
      if (a == "--only") only = read_list(v);
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "usage: onnx_conformance [-m CONFIG] [--expected LIST] [--only LIST] "
                   "[DIR...]\n";
      return 2;
    } else {
      roots.emplace_back(a);
    }
  }
  if (roots.empty()) roots.emplace_back(kDefaultDir);
  std::vector<fs::path> cases;
  for (const fs::path& r : roots) {
    if (fs::exists(r / "model.onnx")) {
      cases.push_back(r);
      continue;
    }
    if (!fs::is_directory(r)) throw ConfigError(fmt::format("{}: no such directory", r.string()));
    for (const auto& e : fs::directory_iterator(r))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  const sim::MachineSpec spec = sim::load_machine_spec(config);
  std::map<std::string, int> counts;
  std::map<std::string, std::string> status;
  for (const fs::path& c : cases) {
    const std::string name = c.filename().string();
    if (only && !only->count(name)) continue;
    Outcome o;
    try {
      o = run_case(c, spec);
    } catch (const std::exception& e) {
      o = {"fail", fmt::format("error: {}", e.what())};
    }
    // One line per case: newlines inside a message are folded.
    std::replace(o.detail.begin(), o.detail.end(), '\n', ' ');
    std::cout << o.status << " " << name << (o.detail.empty() ? "" : ": " + o.detail) << "\n"
              << std::flush;
    ++counts[o.status];
    status[name] = o.status;
  }
  std::cout << fmt::format("total {} cases: {} pass, {} fail, {} unsupported\n", status.size(),
                           counts["pass"], counts["fail"], counts["unsupported"]);
  if (!expected) return 0;
  int missing = 0;
  for (const std::string& name : *expected) {
    auto it = status.find(name);
    if (it != status.end() && it->second == "pass") continue;
    if (only && !only->count(name)) continue;
    std::cout << fmt::format("regression: {} is expected to pass but is {}\n", name,
                             it == status.end() ? "missing" : it->second);
    ++missing;
  }
  if (missing > 0) {
    std::cout << fmt::format("{} expected cases do not pass\n", missing);
    return 1;
  }
  return 0;
}

}  // namespace

static const bool kQuietSystemC = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0;

extern "C" int sc_main(int argc, char** argv) {
  try {
    return run_all(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
