// Reading the contents of an ONNX TensorProto (raw bytes or typed fields) in the ISA's layout:
// little-endian elements, row-major.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "isa/dtype.h"
#include "isa/tensor.h"

namespace fracsim::compiler {

// The ONNX element type of a tensor the importer made: the inverse of dtype_from_onnx, BOOL
// aside (a bool is a u8 of 0 or 1 and reads as UINT8); UNDEFINED for a dtype ONNX lacks.
int32_t onnx_type_of(isa::DType d);

// Whether `perm` orders 0..rank-1, each once (a Transpose's perm).
bool is_permutation(const std::vector<int64_t>& perm, size_t rank);

// numpy's broadcast of two shapes, or nothing when they do not broadcast.
std::optional<isa::Shape> broadcast_shapes(const isa::Shape& a, const isa::Shape& b);

// The most elements a tensor of the model may have.
constexpr int64_t kMaxTensorElements = int64_t{1} << 48;
// Whether no dim of `s` is negative and it has at most kMaxTensorElements elements.
bool countable(const isa::Shape& s);
// ConfigError "FILE: tensor 'NAME': ..." unless the tensor's dims are countable.
void check_countable(const onnx::TensorProto& t, const std::string& file);

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
