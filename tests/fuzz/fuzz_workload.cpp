// The workload-YAML loader: compiler::parse_workload (the in-memory form of load_workload),
// compiled and validated as cli::load_program does for `fracsim run` and `fracsim compile`.
#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fracsim;
  return fuzz::guarded([&] {
    const isa::OpTable& ops = isa::OpTable::builtin();
    const isa::Program p =
        compiler::compile(compiler::parse_workload(fuzz::text_of(data, size), "fuzz.yaml"), ops);
    isa::validate_program(p, ops, "fuzz.yaml");
  });
}
