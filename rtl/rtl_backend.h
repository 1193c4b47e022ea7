// The `rtl` leaf backend: matmul and conv1d/2d/3d instructions with integer inputs run on the
// Verilated matrix unit (rtl/matrix_unit.sv) through MatrixBridge (conv as an implicit im2col),
// integer eltwise add/sub/mul/max/min, activation relu/leaky_relu (Q16 alphas) and reduce
// sum/max/min on the Verilated vector unit (rtl/vector_unit.sv) through VectorBridge, integer
// merges of 1 or 2 runs on the Verilated sort unit (rtl/sort_unit.sv) through SortBridge, and take
// their cycles (each counted in the leaf's rtl_matrix/vector/sort_instructions stats); every other
// op (all of f32, sort, topk, merges of more runs) runs on the C++ unit model.
#pragma once

namespace fracsim::rtl {

// Registers "rtl" in sim's registry of leaf backends. Called explicitly at startup by the CLI
// (a static initializer in a static library would be dropped by the linker). Idempotent.
void register_backends();

}  // namespace fracsim::rtl
