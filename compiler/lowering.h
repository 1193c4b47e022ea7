// Lowering of a workload graph to a FRISA program: each layer becomes root-level instructions over
// whole tensors (dense -> matmul + eltwise add of the bias row; relu, gelu, sigmoid, tanh ->
// activation; add -> eltwise; matmul -> matmul; the CNN layers as lower_cnn.cpp says), every
// tensor gets a place in the root memory (memory_plan.h), and the inputs and weights get seeded
// random contents.
//
// Rules a reader of the program may rely on:
// - eltwise and activation see rank-2 views [prod(leading dims), last dim] (a rank-1 [N] is [1,N]);
//   a bias or a broadcast row b [N] is viewed as [M,N] with strides [0,1];
// - flatten, reshape and transpose emit nothing: their output is a view of their input's bytes
//   (a transpose's is strided; a layer that needs it contiguous gets one copy, "<name>.dense");
//   a concat's buffer holds the outputs of the producers that write into it (lower_cnn.cpp);
// - inputs, weights and outputs (and the buffers outputs are views of) live for the whole
//   program; intermediates only from their producer to their last reader, through any view, so
//   their bytes are reused;
// - data segment i (inputs in declaration order, then each layer's weights in layer order; with
//   fusion or folding, i counts the weights in the order the lowering makes them, dropped ones
//   included, and not the constants only fusion makes) is random with
//   seed = workload seed * 1000003 + i, in [-1, 1) for float inputs, [-8, 8] for
//   integer inputs, +-1/sqrt(fan-in) for the weights and biases of dense and conv2d layers,
//   [0.5, 1.5) for batchnorm's scale and var and layernorm's gamma, [-0.5, 0.5) for batchnorm's
//   bias and mean and layernorm's beta;
// - every instruction is named (Program::instruction_names) by the layer it lowers: a YAML
//   layer's name, an ONNX node's (Layer::node); a copy a layer makes of its input (a strided
//   view made contiguous, a concat's input) is named by that layer;
// - symbols: the inputs, then the weights ("<layer>.weight", "<layer>.bias", "<layer>.scale",
//   ...), then the outputs.
#pragma once

#include "compiler/memory_plan.h"
#include "compiler/workload.h"
#include "isa/op_def.h"
#include "isa/program.h"

namespace fracsim::compiler {

// The seed of data segment `index` of a workload seeded with `seed`.
uint64_t segment_seed(uint64_t seed, uint64_t index);

struct Compilation {
  isa::Program program;
  MemoryPlan plan;  // one entry per tensor (inputs, weights, layer outputs), named as in symbols
};

// Compiles and checks the result with isa::validate_program.
Compilation compile_with_plan(const Workload& w, const isa::OpTable& ops);
isa::Program compile(const Workload& w, const isa::OpTable& ops);

}  // namespace fracsim::compiler
