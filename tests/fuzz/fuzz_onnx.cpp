// The ONNX importer: the model parsed from the bytes as compiler::load_onnx parses a file (the
// same two refusals first), then compiler::import_onnx, compiled and validated as
// cli::load_program does.
#include <onnx/onnx_pb.h>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fracsim;
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph()) return 0;
  return fuzz::guarded([&] {
    const isa::OpTable& ops = isa::OpTable::builtin();
    const isa::Program p = compiler::compile(compiler::import_onnx(model, "fuzz.onnx"), ops);
    isa::validate_program(p, ops, "fuzz.onnx");
  });
}
