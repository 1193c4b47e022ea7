#include "compiler/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_tensor.h"
#include "isa/dtype.h"

namespace fracsim::compiler {

namespace {

using T = onnx::TensorProto;
using isa::Shape;

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(why); }

// Bytes per element of the types read from raw_data; 0 for the others.
size_t raw_size(int32_t type) {
  switch (type) {
    case T::FLOAT:
    case T::INT32:
    case T::UINT32:
      return 4;
    case T::DOUBLE:
    case T::INT64:
    case T::UINT64:
      return 8;
    case T::INT16:
    case T::UINT16:
    case T::FLOAT16:
    case T::BFLOAT16:
      return 2;
    case T::INT8:
    case T::UINT8:
    case T::BOOL:
      return 1;
    default:
      return 0;
  }
}

// The element of `bits` (its low raw_size(type) bytes) as a value.
long double from_bits(int32_t type, uint64_t bits) {
  switch (type) {
    case T::FLOAT: {
      float f;
      uint32_t b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    case T::DOUBLE: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case T::FLOAT16:
      return isa::half_to_double(static_cast<uint16_t>(bits));
    case T::BFLOAT16: {
      float f;
      uint32_t b = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case T::INT64:
      return static_cast<int64_t>(bits);
    case T::INT32:
      return static_cast<int32_t>(bits);
    case T::INT16:
      return static_cast<int16_t>(bits);
    case T::INT8:
      return static_cast<int8_t>(bits);
    case T::BOOL:
      return (bits & 0xff) != 0;
    case T::UINT8:
      return static_cast<uint8_t>(bits);
    case T::UINT16:
      return static_cast<uint16_t>(bits);
    case T::UINT32:
      return static_cast<uint32_t>(bits);
    default:
      return static_cast<long double>(bits);  // UINT64
  }
}

bool is_float_type(int32_t type) {
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16;
}

// The value rounded to an element of `type`, as bits (little-endian, low bytes).
uint64_t to_bits(int32_t type, long double v) {
  switch (type) {
    case T::FLOAT: {
      const float f = static_cast<float>(static_cast<double>(v));
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case T::DOUBLE: {
      const double d = static_cast<double>(v);
      uint64_t b;
      std::memcpy(&b, &d, 8);
      return b;
    }
    case T::FLOAT16:
      return isa::half_from_double(static_cast<double>(v));
    case T::BOOL:
      return v != 0 ? 1 : 0;
    default:
      // Integers: truncation toward zero, then the low bytes (two's complement wrap); a value
      // beyond the 64-bit integers does not fold.
      if (std::isnan(v)) return 0;
      if (!(v >= -0x1p63L && v < 0x1p64L)) refuse(fmt::format("{} is no 64-bit integer", v));
      return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
  }
}

// Rounds every value to what `type` holds (folded results read back as they would be stored).
void round_to(HostTensor& h) {
  for (long double& x : h.v) x = from_bits(h.type, to_bits(h.type, x));
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// An attribute of another type is left to the importer, whose error names the node.
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = attr(n, name);
  if (a && a->type() != onnx::AttributeProto::INT) refuse(fmt::format("attribute '{}'", name));
  return a ? a->i() : fallback;
}

// A flag (0 or 1); another value is left to the importer, whose error names the node.
bool attr_flag(const onnx::NodeProto& n, const std::string& name, bool fallback) {
  const int64_t v = attr_int(n, name, fallback ? 1 : 0);
  if (v != 0 && v != 1) refuse(fmt::format("attribute '{}' is {}, not 0 or 1", name, v));
  return v == 1;
}

std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const onnx::AttributeProto* a = attr(n, name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INTS) refuse(fmt::format("attribute '{}'", name));
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// A value read as an int64 (truncated toward zero); refused beyond the int64 range.
int64_t int_of(long double x) {
  if (!(x >= -0x1p63L && x < 0x1p63L)) refuse(fmt::format("{} is no int64", x));
  return static_cast<int64_t>(x);
}

std::vector<int64_t> ints_of(const HostTensor& h) {
  std::vector<int64_t> out;
  for (long double x : h.v) out.push_back(int_of(x));
  return out;
}

int64_t norm_axis(int64_t axis, size_t rank, const std::string& what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    refuse(fmt::format("{} {} is out of range for rank {}", what, axis, r));
  return axis < 0 ? axis + r : axis;
}

Shape strides_of(const Shape& s) { return isa::contiguous_strides(s); }

// The most elements a folded result may have: folding is for shape computations; a larger
// constant is imported as data (or refused).
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

// The shape of a result, refused when a dim is negative or it has more than kMaxFoldElements.
Shape result_shape(Shape s) {
  int64_t n = 1;
  for (int64_t e : s)
    if (e < 0 || __builtin_mul_overflow(n, e, &n) || n > kMaxFoldElements)
      refuse(fmt::format("the result {} has a negative dim or more than 2^24 elements",
                         isa::shape_str(s)));
  return s;
}

// Numpy broadcasting of several shapes.
Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) refuse(fmt::format("shapes {} do not broadcast", isa::shape_str(s)));
      o = s[i];
    }
  return out;
}

// The element of `h` at the index `idx` of a broadcast shape of rank idx.size().
long double at_broadcast(const HostTensor& h, const std::vector<int64_t>& idx) {
  const size_t lead = idx.size() - h.shape.size();
  int64_t off = 0;
  const Shape st = strides_of(h.shape);
  for (size_t i = 0; i < h.shape.size(); ++i)
    if (h.shape[i] != 1) off += idx[lead + i] * st[i];
  return h.v[off];
}

// Calls fn(index) for each index of `shape` in row-major order.
void each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (isa::num_elements(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

HostTensor elementwise(const std::vector<const HostTensor*>& in, int32_t type,
                       const std::function<long double(const std::vector<long double>&)>& fn) {
  std::vector<Shape> shapes;
  for (const HostTensor* h : in) shapes.push_back(h->shape);
  HostTensor out{type, result_shape(broadcast_shape(shapes)), {}};
  std::vector<long double> args(in.size());
  each_index(out.shape, [&](const std::vector<int64_t>& idx) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = at_broadcast(*in[k], idx);
    out.v.push_back(fn(args));
  });
  round_to(out);
  return out;
}

// A binary arithmetic op in the inputs' type: integers as integers (Div truncates toward zero).
long double arith(const std::string& op, int32_t type, long double a, long double b) {
  const bool integer = !is_float_type(type);
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") {
    if (!integer) return a / b;
    if (b == 0) refuse("integer division by zero");
    return std::trunc(a / b);
  }
  if (op == "Max") return std::isnan(a) || a > b ? a : b;
  if (op == "Min") return std::isnan(a) || a < b ? a : b;
  refuse("op " + op);
}

HostTensor reshape_to(HostTensor h, Shape s) {
  if (!countable(s) || static_cast<size_t>(isa::num_elements(s)) != h.v.size())
    refuse(fmt::format("{} elements viewed as {}", h.v.size(), isa::shape_str(s)));
  h.shape = std::move(s);
  return h;
}

HostTensor transpose(const HostTensor& x, const std::vector<int64_t>& perm) {
  if (!is_permutation(perm, x.shape.size()))
    refuse(fmt::format("perm {} is not a permutation of the {} dims", perm, x.shape.size()));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[p]);
  HostTensor y{x.type, out, {}};
  const Shape st = strides_of(x.shape);
  each_index(out, [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t i = 0; i < perm.size(); ++i) off += idx[i] * st[perm[i]];
    y.v.push_back(x.v[off]);
  });
  return y;
}

HostTensor slice(const HostTensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                 std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const size_t rank = x.shape.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    refuse("starts, ends, axes and steps differ in length");
  std::vector<int64_t> lo(rank, 0), step(rank, 1);
  Shape out = x.shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t ax = norm_axis(axes[k], rank, "axis");
    const int64_t dim = x.shape[ax], st = steps[k];
    if (st == 0) refuse("a step of 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out[ax] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out[ax] = s > e ? (s - e - st - 1) / -st : 0;
    }
    lo[ax] = s;
    step[ax] = st;
  }
  HostTensor y{x.type, out, {}};
  const Shape xs = strides_of(x.shape);
  each_index(out, [&](const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i) off += (lo[i] + idx[i] * step[i]) * xs[i];
    y.v.push_back(x.v[off]);
  });
  return y;
}

const HostTensor& need(const std::vector<std::optional<HostTensor>>& in, size_t i,
                       const std::string& what) {
  if (i >= in.size() || !in[i]) refuse(fmt::format("input {} ({}) is missing", i, what));
  return *in[i];
}

}  // namespace

std::optional<HostTensor> host_tensor(const onnx::TensorProto& t) {
  HostTensor h;
  h.type = t.data_type();
  h.shape = Shape(t.dims().begin(), t.dims().end());
  const size_t size = raw_size(h.type);
  if (size == 0 || t.data_location() == T::EXTERNAL || !countable(h.shape)) return std::nullopt;
  const size_t count = static_cast<size_t>(isa::num_elements(h.shape));
  if (!t.raw_data().empty()) {
    if (t.raw_data().size() != count * size) return std::nullopt;
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, t.raw_data().data() + i * size, size);
      h.v.push_back(from_bits(h.type, bits));
    }
    return h;
  }
  switch (h.type) {
    case T::FLOAT:
      for (float f : t.float_data()) h.v.push_back(f);
      break;
    case T::DOUBLE:
      for (double d : t.double_data()) h.v.push_back(d);
      break;
    case T::INT64:
      for (int64_t i : t.int64_data()) h.v.push_back(i);
      break;
    case T::UINT32:
    case T::UINT64:
      for (uint64_t u : t.uint64_data()) h.v.push_back(from_bits(h.type, u));
      break;
    default:
      for (int32_t i : t.int32_data()) h.v.push_back(from_bits(h.type, static_cast<uint32_t>(i)));
  }
  if (h.v.size() != count) return std::nullopt;
  return h;
}

onnx::TensorProto to_proto(const HostTensor& h, const std::string& name) {
  T t;
  t.set_name(name);
  t.set_data_type(h.type);
  for (int64_t d : h.shape) t.add_dims(d);
  const size_t size = raw_size(h.type);
  std::string raw(h.v.size() * size, '\0');
  for (size_t i = 0; i < h.v.size(); ++i) {
    const uint64_t bits = to_bits(h.type, h.v[i]);
    std::memcpy(raw.data() + i * size, &bits, size);
  }
  t.set_raw_data(raw);
  return t;
}

const std::set<std::string>& fold_ops() {
  static const std::set<std::string> kOps = {"Abs",
                                             "Add",
                                             "And",
                                             "Cast",
                                             "Ceil",
                                             "Concat",
                                             "ConstantOfShape",
                                             "Div",
                                             "Equal",
                                             "Expand",
                                             "Flatten",
                                             "Floor",
                                             "Gather",
                                             "Greater",
                                             "GreaterOrEqual",
                                             "Identity",
                                             "Less",
                                             "LessOrEqual",
                                             "Max",
                                             "Min",
                                             "Mod",
                                             "Mul",
                                             "Neg",
                                             "Not",
                                             "Or",
                                             "Range",
                                             "Reshape",
                                             "Shape",
                                             "Size",
                                             "Slice",
                                             "Sqrt",
                                             "Squeeze",
                                             "Sub",
                                             "Transpose",
                                             "Unsqueeze",
                                             "Where",
                                             "Xor"};
  return kOps;
}

std::vector<HostTensor> fold_node(const onnx::NodeProto& n, int64_t opset,
                                  const std::vector<std::optional<HostTensor>>& in) {
  const std::string& op = n.op_type();
  auto x = [&]() -> const HostTensor& { return need(in, 0, "input"); };
  if (op == "Identity") return {x()};
  if (op == "Shape") {
    // Only the input's shape is read.
    const int64_t rank = static_cast<int64_t>(x().shape.size());
    int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    HostTensor out{T::INT64, {std::max<int64_t>(0, end - start)}, {}};
    for (int64_t i = start; i < end; ++i) out.v.push_back(x().shape[i]);
    return {out};
  }
  if (op == "Size")
    return {HostTensor{T::INT64, {}, {static_cast<long double>(isa::num_elements(x().shape))}}};
  if (op == "Cast") {
    HostTensor out = x();
    out.type = static_cast<int32_t>(attr_int(n, "to", 0));
    if (raw_size(out.type) == 0) refuse("Cast to a type without numbers");
    if (!is_float_type(out.type))
      for (long double& v : out.v)
        if (std::isinf(v)) refuse("Cast of infinity to an integer");
    round_to(out);
    return {out};
  }
  if (op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" || op == "Sqrt" || op == "Not") {
    HostTensor out = x();
    for (long double& v : out.v) {
      if (op == "Neg") v = -v;
      if (op == "Abs") v = std::fabs(v);
      if (op == "Floor") v = std::floor(v);
      if (op == "Ceil") v = std::ceil(v);
      if (op == "Sqrt") v = std::sqrt(v);
      if (op == "Not") v = v == 0;
    }
    round_to(out);
    return {out};
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min") {
    if (opset < 7 && attr(n, "broadcast")) refuse("the legacy broadcast attribute");
    std::vector<const HostTensor*> args{&need(in, 0, "operand")};  // Max and Min are variadic
    for (size_t i = 1; i < in.size(); ++i) args.push_back(&need(in, i, "operand"));
    const int32_t type = args[0]->type;
    return {elementwise(args, type, [&](const std::vector<long double>& a) {
      long double r = a[0];
      for (size_t i = 1; i < a.size(); ++i) r = arith(op, type, r, a[i]);
      return r;
    })};
  }
  if (op == "Mod") {
    const bool fmod = attr_flag(n, "fmod", false);
    const HostTensor &a = need(in, 0, "A"), &b = need(in, 1, "B");
    return {elementwise({&a, &b}, a.type, [&](const std::vector<long double>& v) {
      if (v[1] == 0 && !is_float_type(a.type)) refuse("integer modulo by zero");
      long double r = std::fmod(v[0], v[1]);
      if (!fmod && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
      return r;
    })};
  }
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
      op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor") {
    const HostTensor &a = need(in, 0, "A"), &b = need(in, 1, "B");
    return {elementwise({&a, &b}, T::BOOL, [&](const std::vector<long double>& v) -> long double {
      if (op == "Equal") return v[0] == v[1];
      if (op == "Less") return v[0] < v[1];
      if (op == "Greater") return v[0] > v[1];
      if (op == "LessOrEqual") return v[0] <= v[1];
      if (op == "GreaterOrEqual") return v[0] >= v[1];
      if (op == "And") return v[0] != 0 && v[1] != 0;
      if (op == "Or") return v[0] != 0 || v[1] != 0;
      return (v[0] != 0) != (v[1] != 0);
    })};
  }
  if (op == "Where") {
    const HostTensor &c = need(in, 0, "condition"), &a = need(in, 1, "X"), &b = need(in, 2, "Y");
    return {elementwise({&c, &a, &b}, a.type,
                        [](const std::vector<long double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  }
  if (op == "Expand") {
    const HostTensor& a = x();
    const std::vector<int64_t> shape = ints_of(need(in, 1, "shape"));
    HostTensor ones{a.type, result_shape(Shape(shape.begin(), shape.end())), {}};
    ones.v.assign(static_cast<size_t>(isa::num_elements(ones.shape)), 0);
    return {
        elementwise({&a, &ones}, a.type, [](const std::vector<long double>& v) { return v[0]; })};
  }
  if (op == "ConstantOfShape") {
    HostTensor value{T::FLOAT, {1}, {0}};
    if (const onnx::AttributeProto* a = attr(n, "value")) {
      auto v = host_tensor(a->t());
      if (!v || v->v.size() != 1) refuse("attribute 'value' must be one number");
      value = *v;
    }
    const std::vector<int64_t> shape = ints_of(x());
    HostTensor out{value.type, result_shape(Shape(shape.begin(), shape.end())), {}};
    out.v.assign(static_cast<size_t>(isa::num_elements(out.shape)), value.v[0]);
    return {out};
  }
  if (op == "Range") {
    const HostTensor &s = need(in, 0, "start"), &l = need(in, 1, "limit"),
                     &d = need(in, 2, "delta");
    if (s.v.size() != 1 || l.v.size() != 1 || d.v.size() != 1)
      refuse("start, limit and delta must be one number each");
    const long double start = s.v[0], limit = l.v[0], delta = d.v[0];
    if (delta == 0) refuse("a delta of 0");
    const long double steps = std::ceil((limit - start) / delta);  // NaN or infinite too
    if (!(steps <= kMaxFoldElements)) refuse(fmt::format("{} elements", steps));
    const int64_t count = steps > 0 ? static_cast<int64_t>(steps) : 0;
    HostTensor out{s.type, {count}, {}};
    for (int64_t i = 0; i < count; ++i) out.v.push_back(start + i * delta);
    round_to(out);
    return {out};
  }
  if (op == "Reshape" || op == "Flatten") {
    const HostTensor& a = x();
    Shape s;
    if (op == "Flatten") {
      const int64_t rank = static_cast<int64_t>(a.shape.size());
      int64_t axis = attr_int(n, "axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) refuse("axis out of range");
      int64_t rows = 1;
      for (int64_t i = 0; i < axis; ++i) rows *= a.shape[i];
      s = {rows, rows == 0 ? 0 : isa::num_elements(a.shape) / rows};
    } else {
      const std::vector<int64_t> spec = opset < 5
                                            ? attr_ints(n, "shape").value_or(std::vector<int64_t>{})
                                            : ints_of(need(in, 1, "shape"));
      const bool allowzero = attr_flag(n, "allowzero", false);
      int unknown = -1;
      for (size_t i = 0; i < spec.size(); ++i) {
        int64_t v = spec[i];
        if (v == 0 && !allowzero) {
          if (i >= a.shape.size()) refuse("shape copies a dim the input lacks");
          v = a.shape[i];
        } else if (v == -1) {
          unknown = static_cast<int>(i);
          v = 1;
        }
        s.push_back(v);
      }
      const int64_t known = isa::num_elements(s);
      if (unknown >= 0 && known > 0) s[unknown] = isa::num_elements(a.shape) / known;
      if (isa::num_elements(s) != isa::num_elements(a.shape))
        refuse(fmt::format("the input {} cannot be viewed as {}", isa::shape_str(a.shape),
                           isa::shape_str(s)));
    }
    return {reshape_to(a, s)};
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    const HostTensor& a = x();
    std::optional<std::vector<int64_t>> axes =
        opset < 13 ? attr_ints(n, "axes")
                   : (in.size() > 1 && in[1] ? std::optional(ints_of(*in[1])) : std::nullopt);
    if (op == "Unsqueeze") {
      if (!axes) refuse("axes are missing");
      const size_t rank = a.shape.size() + axes->size();
      std::vector<bool> inserted(rank, false);
      for (int64_t ax : *axes) {
        const int64_t i = norm_axis(ax, rank, "axis");
        if (inserted[i]) refuse(fmt::format("axes {} repeat an axis", *axes));
        inserted[i] = true;
      }
      Shape s;
      size_t k = 0;
      for (size_t i = 0; i < rank; ++i) s.push_back(inserted[i] ? 1 : a.shape.at(k++));
      return {reshape_to(a, s)};
    }
    std::vector<bool> drop(a.shape.size(), false);
    if (axes)
      for (int64_t ax : *axes) drop[norm_axis(ax, a.shape.size(), "axis")] = true;
    Shape s;
    for (size_t i = 0; i < a.shape.size(); ++i)
      if (!(axes ? drop[i] : a.shape[i] == 1)) s.push_back(a.shape[i]);
    return {reshape_to(a, s)};
  }
  if (op == "Concat") {
    const HostTensor& first = x();
    const int64_t axis = norm_axis(attr_int(n, "axis", 0), first.shape.size(), "axis");
    Shape out = first.shape;
    out[axis] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Shape& s = need(in, i, "input").shape;
      Shape off = s;
      if (s.size() == first.shape.size()) off[axis] = first.shape[axis];
      if (off != first.shape)
        refuse(fmt::format("inputs {} and {} differ off the axis", isa::shape_str(first.shape),
                           isa::shape_str(s)));
      out[axis] += s[axis];
    }
    HostTensor y{first.type, result_shape(out), {}};
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= out[i];
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < in.size(); ++i) {
        const HostTensor& t = *in[i];
        const int64_t chunk = outer == 0 ? 0 : isa::num_elements(t.shape) / outer;
        y.v.insert(y.v.end(), t.v.begin() + o * chunk, t.v.begin() + (o + 1) * chunk);
      }
    return {y};
  }
  if (op == "Gather") {
    const HostTensor& a = x();
    const HostTensor& idx = need(in, 1, "indices");
    const int64_t axis = norm_axis(attr_int(n, "axis", 0), a.shape.size(), "axis");
    Shape out(a.shape.begin(), a.shape.begin() + axis);
    out.insert(out.end(), idx.shape.begin(), idx.shape.end());
    out.insert(out.end(), a.shape.begin() + axis + 1, a.shape.end());
    result_shape(out);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= a.shape[i];
    for (size_t i = axis + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
    const int64_t dim = a.shape[axis];
    HostTensor y{a.type, out, {}};
    for (int64_t o = 0; o < outer; ++o)
      for (long double iv : idx.v) {
        int64_t k = int_of(iv);
        if (k < 0) k += dim;
        if (k < 0 || k >= dim) refuse(fmt::format("index {} out of range", iv));
        const auto b = a.v.begin() + (o * dim + k) * inner;
        y.v.insert(y.v.end(), b, b + inner);
      }
    return {y};
  }
  if (op == "Slice") {
    if (opset < 10)
      return {slice(x(), attr_ints(n, "starts").value_or(std::vector<int64_t>{}),
                    attr_ints(n, "ends").value_or(std::vector<int64_t>{}),
                    attr_ints(n, "axes").value_or(std::vector<int64_t>{}), {})};
    auto opt = [&](size_t i) {
      return i < in.size() && in[i] ? ints_of(*in[i]) : std::vector<int64_t>{};
    };
    return {
        slice(x(), ints_of(need(in, 1, "starts")), ints_of(need(in, 2, "ends")), opt(3), opt(4))};
  }
  if (op == "Transpose") {
    const HostTensor& a = x();
    std::vector<int64_t> perm(a.shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    return {transpose(a, attr_ints(n, "perm").value_or(perm))};
  }
  refuse("op " + op + " does not fold");
}

}  // namespace fracsim::compiler
