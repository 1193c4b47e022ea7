// Reading a program from any of the forms a user may hand the CLI: a workload (.yaml or an ONNX
// model .onnx, compiled on the fly), a binary (.fbin) or an assembly text (.fasm, or "-" for
// standard input).
#pragma once

#include <string>

#include "compiler/workload.h"
#include "isa/program.h"

namespace fracsim::cli {

// A workload by its extension: .yaml/.yml (the workload format) or .onnx.
compiler::Workload load_workload_file(const std::string& path);

// The result has passed isa::validate_program. ConfigError on anything wrong, naming the file.
isa::Program load_program(const std::string& path, const isa::OpTable& ops);

// Writes a file through a temporary and a rename, so that an interrupted or failed write never
// leaves a half-written file where a good one was.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace fracsim::cli
