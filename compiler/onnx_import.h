// The ONNX front end: an .onnx model becomes a Workload (the graph IR the YAML format also
// becomes), so both share one lowering.
//
// Rules a user may rely on:
// - supported ops (default domain, opsets up to kMaxOnnxOpset): Conv, ConvTranspose, MaxPool, AveragePool,
//   GlobalAveragePool, GlobalMaxPool, Gemm, MatMul, Add, Sub, Mul, Div, Max, Min, Relu,
//   LeakyRelu, Sigmoid, Tanh, Exp, Softmax, LogSoftmax, BatchNormalization (inference), LRN,
//   Flatten, Reshape, Transpose, Concat, ReduceSum, ReduceMean, ReduceMax, ReduceMin, TopK,
//   LayerNormalization and Constant. Anything else (an op, an attribute or attribute value, an
//   extra output, a dtype outside f32, i32, i16 and i8, a dynamic shape) is a ConfigError
//   "FILE: node 'NAME' (OP): ..." (the node's index when it has no name), never a silent skip;
// - tensors keep their ONNX names; each node becomes one layer named after its first output;
// - initializers and Constant outputs are weights with their bytes; a graph input (or an
//   initializer without data) gets seeded random contents, as a YAML workload's inputs;
// - a tensor an op needs as a compile-time value (Reshape's shape, TopK's K, ReduceSum's axes)
//   must be an initializer, a Constant output or an input given a value; int64 tensors are only
//   accepted there;
// - TopK's indices are i32 (ONNX: int64): the ISA's index type.
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "compiler/workload.h"

namespace fracsim::compiler {

// The newest opset of the default domain the importer reads (that of Debian's libonnx); a model
// importing a newer one is refused.
constexpr int64_t kMaxOnnxOpset = 17;

// Reads and imports a model file; ConfigError naming the file when it is no ONNX model. With
// options.batch, the graph inputs that carry the batch (batch.h) get it as their dim 0 and
// ONNX's shape inference carries it through; a node it cannot pass is a ConfigError naming it.
Workload load_onnx(const std::string& path, const CompileOptions& options = {});
// Same, with values for graph inputs (by name): such an input is a constant where an op needs
// one and an input with these contents otherwise (it does not carry a batch).
Workload load_onnx(const std::string& path,
                   const std::map<std::string, onnx::TensorProto>& input_values,
                   const CompileOptions& options = {});
// Imports a model already in memory; `file` names it in messages.
Workload import_onnx(const onnx::ModelProto& model, const std::string& file,
                     const std::map<std::string, onnx::TensorProto>& input_values = {},
                     const CompileOptions& options = {});

// The ISA dtype of an ONNX element type; nullopt outside f32, i32, i16 and i8.
std::optional<isa::DType> dtype_from_onnx(int32_t elem_type);
// The element type's ONNX name ("FLOAT", "INT64").
std::string onnx_type_name(int32_t elem_type);

}  // namespace fracsim::compiler
