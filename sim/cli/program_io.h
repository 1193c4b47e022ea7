// Reading a program from any of the forms a user may hand the CLI: a workload (.yaml or an ONNX
// model .onnx, compiled on the fly), a binary (.fbin) or an assembly text (.fasm, or "-" for
// standard input).
#pragma once

#include <string>
#include <string_view>

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

// The description of --batch, shared by `fracsim compile` and `fracsim run`.
inline constexpr const char* kBatchHelp =
    "N: the workload at batch N, a positive integer (every input's leading dim set to N)";

// The compiler's options from the flags of `fracsim COMMAND`: `batch` is --batch's text ("" when
// not given) and must be a positive integer.
compiler::CompileOptions compile_options(std::string_view command, const std::string& batch);

// --fuse and --fold-bn, shared by `fracsim compile` and `fracsim run`.
inline constexpr const char* kFuseHelp =
    "fuse each conv2d/matmul with the bias add, residual add and activation that alone read its "
    "output into one epilogue op (isa/ops/ext/*_act.yaml), named by the conv/matmul layer";
inline constexpr const char* kFoldBnHelp =
    "fold a batchnorm after a conv2d into the conv's weight and bias (computed in double, "
    "rounded once to f32)";

}  // namespace fracsim::cli
