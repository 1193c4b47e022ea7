// Lowering of a workload graph to a FRISA program: each layer becomes root-level instructions over
// whole tensors (dense -> matmul + eltwise add of the bias row; relu -> activation; add -> eltwise;
// matmul -> matmul), every tensor gets a place in the root memory (memory_plan.h), and the inputs
// and weights get seeded random contents.
//
// Rules a reader of the program may rely on:
// - eltwise and activation see rank-2 views [prod(leading dims), last dim] (a rank-1 [N] is [1,N]);
//   a bias or a broadcast row b [N] is viewed as [M,N] with strides [0,1];
// - inputs, weights and outputs live for the whole program; intermediates only from their producer
//   to their last reader, so their bytes are reused;
// - data segment i (inputs in declaration order, then each dense layer's weight and bias) is
//   random with seed = workload seed * 1000003 + i, in [-1, 1) for float inputs, [-8, 8] for
//   integer inputs, and +-1/sqrt(K) for the weights of a dense layer with K input features;
// - symbols: the inputs, then the weights ("<layer>.weight", "<layer>.bias"), then the outputs.
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
