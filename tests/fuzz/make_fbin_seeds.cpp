// The .fbin seeds: each .fasm named after OUTDIR assembled (as `fracsim asm` does) into
// OUTDIR/<stem>.fbin. Used by tests/fuzz/gather_seeds.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "isa/assembly.h"
#include "isa/encoding.h"
#include "isa/error.h"
#include "isa/op_def.h"

int main(int argc, char** argv) {
  using namespace fracsim;
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_fbin_seeds OUTDIR FILE.fasm...\n");
    return 2;
  }
  try {
    for (int i = 2; i < argc; ++i) {
      std::ifstream in(argv[i], std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      const isa::Program p = isa::assemble(text, argv[i], isa::OpTable::builtin());
      isa::write_file_bytes(
          (std::filesystem::path(argv[1]) / std::filesystem::path(argv[i]).stem()).string() +
              ".fbin",
          isa::encode_program(p));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fbin_seeds: %s\n", e.what());
    return 2;
  }
  return 0;
}
