#include "sim/cli/program_io.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/workload.h"
#include "isa/assembly.h"
#include "isa/encoding.h"
#include "isa/error.h"

namespace fracsim::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_text(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

bool is_workload_path(const std::string& path) {
  return ends_with(path, ".yaml") || ends_with(path, ".yml") || ends_with(path, ".onnx");
}

compiler::Workload load_workload_file(const std::string& path,
                                      const compiler::CompileOptions& options) {
  if (ends_with(path, ".onnx")) return compiler::load_onnx(path, options);
  if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
    return compiler::load_workload(path, options);
  throw ConfigError(
      fmt::format("{}: unknown workload format (expected a workload .yaml or an ONNX model "
                  ".onnx)",
                  path));
}

isa::Program load_program(const std::string& path, const isa::OpTable& ops,
                          const compiler::CompileOptions& options) {
  isa::Program p;
  if (is_workload_path(path)) {
    p = compiler::compile(load_workload_file(path, options), ops);
  } else if (options.batch) {
    throw ConfigError(fmt::format(
        "{}: --batch applies to a workload (.yaml, .onnx), not to a compiled program", path));
  } else if (ends_with(path, ".fbin")) {
    p = isa::decode_program(isa::read_file_bytes(path), path);
    isa::default_appended_attributes(p, ops);
  } else if (ends_with(path, ".fasm") || path == "-") {
    p = isa::assemble(read_text(path), path == "-" ? "<stdin>" : path, ops);
  } else {
    throw ConfigError(
        fmt::format("{}: unknown program format (expected a workload .yaml, an ONNX model "
                    ".onnx, a .fbin or a .fasm file)",
                    path));
  }
  isa::validate_program(p, ops, path);
  return p;
}

void add_compile_flags(boost::program_options::options_description& opts, CompileFlags& f) {
  namespace po = boost::program_options;
  auto add = opts.add_options();
  add("batch", po::value(&f.batch),
      "N: the workload at batch N, a positive integer (every input's leading dim set to N)");
  add("no-fuse", po::bool_switch(&f.no_fuse),
      "keep each conv2d/matmul apart from the bias add, residual add and activation that alone "
      "read its output (by default they are fused into one epilogue op, isa/ops/ext/*_act.yaml, "
      "named by the conv/matmul layer), and the other rewrites of compiler/README.md: the GELU, "
      "LayerNorm and scaled-softmax chains as one op each, a strided 1x1 conv through a strided "
      "view, reshapes "
      "and attention's head merge as views instead of copies");
  add("no-fold-bn", po::bool_switch(&f.no_fold_bn),
      "keep each batchnorm after a conv2d as its own layer (by default it is folded into the "
      "conv's weight and bias, computed in double and rounded once to f32)");
}

compiler::CompileOptions compile_options(std::string_view command, const CompileFlags& f) {
  compiler::CompileOptions o;
  o.fuse = !f.no_fuse;
  o.fold_batchnorm = !f.no_fold_bn;
  if (f.batch.empty()) return o;
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(f.batch.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || n <= 0)
    throw ConfigError(fmt::format("fracsim {}: --batch: expected a positive integer, got '{}'",
                                  command, f.batch));
  o.batch = n;
  return o;
}

}  // namespace fracsim::cli
