// The `rtl` leaf backend: matmul instructions with integer inputs run on the Verilated matrix
// unit (rtl/matrix_unit.sv) through MatrixBridge, and take its cycles; every other op runs on the
// C++ unit model (the vector and sort units' RTL comes later).
#pragma once

namespace fracsim::rtl {

// Registers "rtl" in sim's registry of leaf backends. Called explicitly at startup by the CLI
// (a static initializer in a static library would be dropped by the linker). Idempotent.
void register_backends();

}  // namespace fracsim::rtl
