// Fusion of element-wise patterns on the graph IR (CompileOptions::fuse), before lowering: layers
// that an exporter spells as chains of element-wise nodes become the one layer they compute, so
// that the lowering emits one instruction (or folds it into a matmul's epilogue, lower_fused.cpp)
// instead of a round trip through memory per node. Results stay bit for bit those of the chain.
#pragma once

#include <optional>

#include "compiler/workload.h"

namespace fracsim::compiler {

// The workload with its patterns fused; std::nullopt when none matched (lower `w` as it is).
// - GELU in its tanh form, from x: x2 = x*x, x3 = x2*x, cx3 = x3*c, inner = x + cx3,
//   arg = inner*k, t = tanh(arg), one_plus = t + 1, half_x = x*0.5, y = half_x*one_plus (Mul and
//   Add operands in either order; c, k, 1 and 0.5 scalar f32 initializers of exactly the values
//   of isa::kGeluTanhC, kGeluTanhK, 1 and 0.5): one activation layer, fn gelu_tanh, named by y's
//   layer. Each intermediate must have that one reader and be no workload output; x may have
//   readers outside the pattern.
// - GELU in its erf form (PyTorch's export of nn.GELU), from x: d = x / s, e = Erf(d),
//   a = e + 1, m = x * a, y = m * 0.5 (Mul and Add operands in either order; s, 1 and 0.5 scalar
//   f32 initializers of exactly the values of isa::kGeluErfS, 1 and 0.5): one activation layer,
//   fn gelu_erf, named by y's layer; the same conditions on the intermediates and x.
// - LayerNorm over the last axis as PyTorch exports nn.LayerNorm before opset 17, from x:
//   mean = ReduceMean(x), d = x - mean, var = ReduceMean(Pow(d, 2)), n = d / Sqrt(var + eps),
//   y = n * gamma + beta (the means over the last axis only, dims kept; 2 and eps scalar f32
//   initializers; gamma and beta f32 of the last dim's length; Mul and Add operands in either
//   order; d read by the square and the division only, every other intermediate once, none a
//   workload output): one layernorm layer with `sqrt_divide` (the op's `divide`), epsilon eps,
//   named by y's layer.
// - Attention's scaled, optionally masked softmax: y = Softmax(Div(scores, s)) or
//   Softmax(Add(Div(scores, s), mask)) along the last axis, s a scalar f32 initializer, the mask
//   f32 of a shape that, without its leading 1s, is a suffix of the scores' shape (broadcast over
//   the heads), each intermediate read once and no workload output: one softmax layer,
//   `divided` by s, with the mask as its second input, named by the Softmax's layer.
std::optional<Workload> fuse_layer_patterns(const Workload& w);

}  // namespace fracsim::compiler
