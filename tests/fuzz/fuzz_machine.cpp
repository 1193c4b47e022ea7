// The machine-YAML loader: sim::parse_machine_spec, the in-memory form of the load_machine_spec
// that `fracsim run`, `config check` and `sweep` call.
#include "sim/machine_spec.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fracsim;
  return fuzz::guarded([&] { sim::parse_machine_spec(fuzz::text_of(data, size), "fuzz.yaml"); });
}

// libsystemc, which the machine library links, calls sc_main from its main(); libFuzzer's main
// runs instead, so this is never called.
extern "C" int sc_main(int, char**) { return 0; }
