// Reading a program from any of the forms a user may hand the CLI: a workload (.yaml or an ONNX
// model .onnx, compiled on the fly), a binary (.fbin) or an assembly text (.fasm, or "-" for
// standard input).
#pragma once

#include <string>
#include <string_view>

#include <boost/program_options.hpp>

#include "compiler/compile_options.h"
#include "compiler/workload.h"
#include "isa/program.h"
#include "sim/cli/atomic_file.h"

namespace fracsim::cli {

// Whether `path` names a workload (.yaml, .yml, .onnx) rather than a compiled program.
bool is_workload_path(const std::string& path);

// A workload by its extension: .yaml/.yml (the workload format) or .onnx.
compiler::Workload load_workload_file(const std::string& path,
                                      const compiler::CompileOptions& options = {});

// The result has passed isa::validate_program. ConfigError on anything wrong, naming the file;
// `options` apply to workloads only (a compiled program refuses a batch).
isa::Program load_program(const std::string& path, const isa::OpTable& ops,
                          const compiler::CompileOptions& options = {});

// The compiler's flags of `fracsim compile`, `fracsim run` and `fracsim map`, as given.
struct CompileFlags {
  std::string batch;  // --batch's text, "" when not given
  bool no_fuse = false, no_fold_bn = false;
};

// Declares --batch, --no-fuse and --no-fold-bn (once, for every command taking them).
void add_compile_flags(boost::program_options::options_description& opts, CompileFlags& f);

// The compiler's options from those flags; --batch must be a positive integer.
compiler::CompileOptions compile_options(std::string_view command, const CompileFlags& f);

}  // namespace fracsim::cli
