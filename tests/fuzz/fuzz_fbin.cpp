// The .fbin decoder: isa::decode_program, then validate_program, as cli::load_program does.
// A mutated file almost never keeps a valid trailing checksum, and the decoder checks it before
// the body; so each input is decoded as given and, when at least 4 bytes long, once more with
// its last 4 bytes replaced by the FNV-1a of the rest, which takes the mutation into the body.
#include <vector>

#include "isa/encoding.h"
#include "isa/op_def.h"
#include "isa/program.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

void load(const std::vector<uint8_t>& bytes) {
  using namespace fracsim;
  fuzz::guarded([&] {
    const isa::OpTable& ops = isa::OpTable::builtin();
    const isa::Program p = isa::decode_program(bytes, "fuzz.fbin");
    isa::validate_program(p, ops, "fuzz.fbin");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  load(bytes);
  if (size >= 4) {
    const uint32_t sum = fracsim::isa::fnv1a32(bytes.data(), size - 4);
    for (size_t i = 0; i < 4; ++i) bytes[size - 4 + i] = static_cast<uint8_t>(sum >> (8 * i));
    load(bytes);
  }
  return 0;
}
