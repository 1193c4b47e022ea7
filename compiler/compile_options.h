// What a user may ask of the compiler beyond the workload itself.
#pragma once

#include <cstdint>
#include <optional>

namespace fracsim::compiler {

struct CompileOptions {
  // The workload at this batch: the leading dim of every input that carries the batch is set
  // to it and shape inference carries it through (batch.h); nullopt: the workload as written.
  std::optional<int64_t> batch;
  // The compiler's rewrites beyond the plain lowering: epilogue fusion (compiler/lower_fused.cpp:
  // a conv2d or matmul and the bias add, residual add and activation that alone read its output
  // become one epilogue op), the GELU and scaled-softmax chains (layer_fusion.h), a strided
  // 1x1 conv reading its input through a strided view, and the layouts that spare a copy: a
  // reshape of a strided tensor as a view where its strides allow, a batched matmul writing its
  // output in the layout a transpose and reshape read (lower_cnn.cpp).
  bool fuse = true;
  // A batchnorm after a conv2d whose weights are known at compile time is folded into the
  // conv's weight and bias (YAML and ONNX alike; see lower_fused.cpp).
  bool fold_batchnorm = true;
};

}  // namespace fracsim::compiler
