#include "compiler/onnx_tensor.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "compiler/onnx_import.h"
#include "isa/error.h"

namespace fracsim::compiler {

bool countable(const isa::Shape& s) {
  int64_t n = 1;
  for (int64_t e : s)
    if (e < 0 || __builtin_mul_overflow(n, e, &n) || n > kMaxTensorElements) return false;
  return true;
}

bool is_permutation(const std::vector<int64_t>& perm, size_t rank) {
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = sorted.size() == rank;
  for (size_t i = 0; i < sorted.size(); ++i) ok = ok && sorted[i] == static_cast<int64_t>(i);
  return ok;
}

isa::Shape tensor_shape(const onnx::TensorProto& t) {
  return isa::Shape(t.dims().begin(), t.dims().end());
}

void check_countable(const onnx::TensorProto& t, const std::string& file) {
  const isa::Shape s = tensor_shape(t);
  if (!countable(s))
    throw ConfigError(fmt::format("{}: tensor '{}': the shape {} has a negative dim or more than "
                                  "2^48 elements",
                                  file, t.name(), isa::shape_str(s)));
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
  // The typed field of each dtype (onnx.proto): FLOAT in float_data, DOUBLE in double_data,
  // INT64 in int64_data, UINT32 and UINT64 in uint64_data, and the narrower types (FLOAT16 and
  // BFLOAT16 as their bits) one per int32_data entry.
  auto widen = [&](const auto& field) {
    check_count(t, static_cast<size_t>(field.size()));
    out.resize(static_cast<size_t>(field.size()) * size);
    for (int i = 0; i < field.size(); ++i) {
      const auto v = field.Get(i);
      std::memcpy(out.data() + i * size, &v, size);  // little-endian: the low bytes
    }
    return out;
  };
  switch (dtype) {
    case isa::DType::f32:
      return widen(t.float_data());
    case isa::DType::f64:
      return widen(t.double_data());
    case isa::DType::i64:
      return widen(t.int64_data());
    case isa::DType::u32:
    case isa::DType::u64:
      return widen(t.uint64_data());
    default:
      return widen(t.int32_data());
  }
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

int32_t onnx_type_of(isa::DType d) {
  for (int32_t t = onnx::TensorProto::FLOAT; t <= onnx::TensorProto::BFLOAT16; ++t)
    if (t != onnx::TensorProto::BOOL && dtype_from_onnx(t) == d) return t;
  return onnx::TensorProto::UNDEFINED;
}

std::optional<isa::Shape> broadcast_shapes(const isa::Shape& a, const isa::Shape& b) {
  isa::Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t ea = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t eb = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (ea != eb && ea != 1 && eb != 1) return std::nullopt;
    out[out.size() - 1 - i] = std::max(ea, eb);
  }
  return out;
}

}  // namespace fracsim::compiler
