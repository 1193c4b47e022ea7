// The .fasm parser: isa::assemble, then validate_program, as cli::load_program does.
#include "isa/assembly.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fracsim;
  return fuzz::guarded([&] {
    const isa::OpTable& ops = isa::OpTable::builtin();
    const isa::Program p = isa::assemble(fuzz::text_of(data, size), "fuzz.fasm", ops);
    isa::validate_program(p, ops, "fuzz.fasm");
  });
}
