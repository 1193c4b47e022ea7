// Reading the contents of an ONNX TensorProto (raw bytes or typed fields) in the ISA's layout:
// little-endian elements, row-major.
#pragma once

#include <cstdint>
#include <vector>

#include <onnx/onnx_pb.h>

#include "isa/dtype.h"
#include "isa/tensor.h"

namespace fracsim::compiler {

isa::Shape tensor_shape(const onnx::TensorProto& t);
// Whether the tensor carries its elements (an initializer may come without, or with external
// data, which fracsim does not read).
bool tensor_has_data(const onnx::TensorProto& t);
// The elements of a tensor as `dtype` bytes (the ONNX type that dtype_from_onnx maps to it);
// ConfigError when the element count does not match the shape.
std::vector<uint8_t> tensor_bytes(const onnx::TensorProto& t, isa::DType dtype);
// The elements of an INT64 or INT32 tensor.
std::vector<int64_t> tensor_ints(const onnx::TensorProto& t);

}  // namespace fracsim::compiler
