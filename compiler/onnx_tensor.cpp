#include "compiler/onnx_tensor.h"

#include <cstring>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::compiler {

isa::Shape tensor_shape(const onnx::TensorProto& t) {
  return isa::Shape(t.dims().begin(), t.dims().end());
}

bool tensor_has_data(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return false;
  return !t.raw_data().empty() || t.float_data_size() > 0 || t.int32_data_size() > 0 ||
         t.int64_data_size() > 0 || t.double_data_size() > 0 ||
         isa::num_elements(tensor_shape(t)) == 0;
}

namespace {

void check_count(const onnx::TensorProto& t, size_t count) {
  const int64_t want = isa::num_elements(tensor_shape(t));
  if (static_cast<int64_t>(count) != want)
    throw ConfigError(fmt::format("tensor '{}': {} elements for the shape {}", t.name(), count,
                                  isa::shape_str(tensor_shape(t))));
}

}  // namespace

std::vector<uint8_t> tensor_bytes(const onnx::TensorProto& t, isa::DType dtype) {
  const size_t size = isa::dtype_size(dtype);
  if (!t.raw_data().empty()) {
    check_count(t, t.raw_data().size() / size);
    return std::vector<uint8_t>(t.raw_data().begin(), t.raw_data().end());
  }
  std::vector<uint8_t> out;
  if (dtype == isa::DType::f32) {
    check_count(t, static_cast<size_t>(t.float_data_size()));
    out.resize(t.float_data_size() * size);
    std::memcpy(out.data(), t.float_data().data(), out.size());
    return out;
  }
  // INT32, INT16 and INT8 elements are stored one per int32_data entry.
  check_count(t, static_cast<size_t>(t.int32_data_size()));
  out.resize(t.int32_data_size() * size);
  for (int i = 0; i < t.int32_data_size(); ++i) {
    const int32_t v = t.int32_data(i);
    std::memcpy(out.data() + i * size, &v, size);  // little-endian: the low bytes
  }
  return out;
}

std::vector<int64_t> tensor_ints(const onnx::TensorProto& t) {
  std::vector<int64_t> out;
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (!t.raw_data().empty()) {
      out.resize(t.raw_data().size() / 8);
      std::memcpy(out.data(), t.raw_data().data(), out.size() * 8);
    } else {
      out.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else {
    if (!t.raw_data().empty()) {
      std::vector<int32_t> v(t.raw_data().size() / 4);
      std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
      out.assign(v.begin(), v.end());
    } else {
      out.assign(t.int32_data().begin(), t.int32_data().end());
    }
  }
  check_count(t, out.size());
  return out;
}

}  // namespace fracsim::compiler
