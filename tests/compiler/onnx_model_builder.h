// Small ONNX models built in code for the front end's tests.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace fracsim::testing {

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }

  OnnxModelBuilder& input(const std::string& name, int32_t type, std::vector<int64_t> dims) {
    value(model_.mutable_graph()->add_input(), name, type, dims);
    return *this;
  }
  // An input of rank 0 (a shape without dims).
  OnnxModelBuilder& scalar_input(const std::string& name, int32_t type) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    t->mutable_shape();
    return *this;
  }
  // An input whose first dim is the symbol `param`.
  OnnxModelBuilder& dynamic_input(const std::string& name, const std::string& param) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param(param);
    return *this;
  }
  // Empty dims: a value without a shape.
  OnnxModelBuilder& output(const std::string& name, int32_t type, std::vector<int64_t> dims) {
    value(model_.mutable_graph()->add_output(), name, type, dims);
    return *this;
  }
  OnnxModelBuilder& floats(const std::string& name, std::vector<int64_t> dims,
                           std::vector<float> values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  OnnxModelBuilder& ints(const std::string& name, std::vector<int64_t> values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  const onnx::ModelProto& model() const { return model_; }
  void save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    model_.SerializeToOstream(&out);
  }

 private:
  static void value(onnx::ValueInfoProto* v, const std::string& name, int32_t type,
                    const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    if (dims.empty()) return;  // no shape given
    auto* s = t->mutable_shape();
    for (int64_t d : dims) s->add_dim()->set_dim_value(d);
  }

  onnx::ModelProto model_;
};

inline void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void set_attr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void set_attr(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace fracsim::testing
