// Constant folding of ONNX nodes at import: the shape computations exporters write (Shape,
// Gather, Unsqueeze, Concat, Slice, ConstantOfShape, Equal, Where, Expand, Range, Cast, ...)
// evaluated on the host, so that the graph the compiler lowers has static shapes.
//
// Rules:
// - a node folds when every input it reads is a compile-time constant of the model (an
//   initializer, a Constant output or a folded result; an input given a value is data, not a
//   constant) and its op is one of fold_ops(); Shape and Size fold on any tensor whose shape
//   is known, as the result depends on the shape only;
// - values are held as long double (exact for every int64 and every float) and written back
//   in the output's ONNX type: float results rounded once to float, integers by C++'s
//   conversion (truncation toward zero, as ONNX's Cast from float).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "isa/tensor.h"

namespace fracsim::compiler {

// An ONNX tensor's elements on the host, any numeric or bool type.
struct HostTensor {
  int32_t type = onnx::TensorProto::FLOAT;
  isa::Shape shape;
  std::vector<long double> v;
};

// nullopt for types without numeric elements (string, complex, bfloat16 without data).
std::optional<HostTensor> host_tensor(const onnx::TensorProto& t);
onnx::TensorProto to_proto(const HostTensor& h, const std::string& name);

// The ops fold_node() evaluates.
const std::set<std::string>& fold_ops();

// Evaluates `node` (op_type, attributes, opset) on its inputs (nullopt for an absent optional
// input); the outputs in order. Throws std::invalid_argument with a reason when the node's
// attributes or inputs are not ones the folder handles (the importer then lowers the node or
// names the reason).
std::vector<HostTensor> fold_node(const onnx::NodeProto& node, int64_t opset,
                                  const std::vector<std::optional<HostTensor>>& inputs);

}  // namespace fracsim::compiler
