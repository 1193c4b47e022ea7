#include "isa/expr.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "isa/error.h"

namespace fracsim::isa {

namespace {
struct VarRegistry {
  std::mutex mutex;
  std::unordered_map<std::string, int> ids;
  std::deque<std::string> names;  // by id (a deque: references stay valid as it grows)
};
VarRegistry& registry() {
  static VarRegistry r;
  return r;
}
}  // namespace

int var_id(const std::string& name) {
  VarRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, fresh] = r.ids.try_emplace(name, static_cast<int>(r.names.size()));
  if (fresh) r.names.push_back(name);
  return it->second;
}

const std::string& var_name(int id) {
  VarRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.names.at(static_cast<size_t>(id));
}

Vars::Vars() {
  VarRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  value_.resize(r.names.size());
  bound_.resize(r.names.size());
}

void Vars::grow(int id) {
  value_.resize(static_cast<size_t>(id) + 1);
  bound_.resize(static_cast<size_t>(id) + 1);
}

void Vars::unbound(int id) const {
  throw InternalError(fmt::format("formula name '{}' unbound", var_name(id)));
}

struct Expr::Node {
  char op = 0;  // 0: literal, 'v': name, 'f': function call, else a binary operator
  int64_t value = 0;
  std::string name;
  int id = -1;                                                          // 'v': var_id(name)
  enum class Fn : uint8_t { cdiv, min, max, eq, clog2 } fn = Fn::cdiv;  // 'f'
  std::shared_ptr<const Node> lhs, rhs;
  std::vector<std::shared_ptr<const Node>> args;  // 'f'
};

namespace {
// The functions a formula may call, with their argument counts.
struct Function {
  Expr::Node::Fn fn;
  size_t args;
};
const std::map<std::string, Function>& functions() {
  using Fn = Expr::Node::Fn;
  static const std::map<std::string, Function> f = {{"cdiv", {Fn::cdiv, 2}},
                                                    {"min", {Fn::min, 2}},
                                                    {"max", {Fn::max, 2}},
                                                    {"eq", {Fn::eq, 2}},
                                                    {"clog2", {Fn::clog2, 1}}};
  return f;
}
}  // namespace

namespace {
using NodePtr = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  Parser(const std::string& s, const std::string& where) : s_(s), where_(where) {}
  NodePtr parse() {
    NodePtr n = sum();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return n;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const std::string& why) {
    throw ConfigError(fmt::format("{}: formula '{}': {} at column {}", where_, s_, why, pos_ + 1));
  }
  NodePtr bin(char op, NodePtr l, NodePtr r) {
    auto n = std::make_shared<Expr::Node>();
    n->op = op;
    n->lhs = std::move(l);
    n->rhs = std::move(r);
    return n;
  }
  NodePtr sum() {
    NodePtr l = product();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'); skip()) {
      char op = s_[pos_++];
      l = bin(op, l, product());
    }
    return l;
  }
  NodePtr product() {
    NodePtr l = atom();
    for (skip(); pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/'); skip()) {
      char op = s_[pos_++];
      l = bin(op, l, atom());
    }
    return l;
  }
  NodePtr atom() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    char c = s_[pos_];
    auto n = std::make_shared<Expr::Node>();
    if (c == '(') {
      ++pos_;
      NodePtr inner = sum();
      skip();
      if (pos_ >= s_.size() || s_[pos_] != ')') fail("missing ')'");
      ++pos_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        n->value = n->value * 10 + (s_[pos_++] - '0');
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      n->op = 'v';
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        n->name += s_[pos_++];
      n->id = var_id(n->name);
      skip();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        auto f = functions().find(n->name);
        if (f == functions().end()) fail("unknown function '" + n->name + "'");
        n->op = 'f';
        n->fn = f->second.fn;
        ++pos_;
        while (true) {
          n->args.push_back(sum());
          skip();
          if (pos_ < s_.size() && s_[pos_] == ',') {
            ++pos_;
            continue;
          }
          if (pos_ < s_.size() && s_[pos_] == ')') {
            ++pos_;
            break;
          }
          fail("expected ',' or ')'");
        }
        if (n->args.size() != f->second.args)
          fail(fmt::format("{} takes {} argument(s), got {}", n->name, f->second.args,
                           n->args.size()));
      }
      return n;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

// `lookup(node)` gives a name's value.
template <typename Lookup>
int64_t eval_node(const Expr::Node& n, const Lookup& lookup) {
  switch (n.op) {
    case 0:
      return n.value;
    case 'v':
      return lookup(n);
    case 'f': {
      using Fn = Expr::Node::Fn;
      const int64_t a0 = eval_node(*n.args[0], lookup);
      if (n.fn == Fn::clog2) {
        int64_t bits = 0;
        while ((int64_t{1} << bits) < a0) ++bits;
        return bits;
      }
      const int64_t a1 = eval_node(*n.args[1], lookup);
      switch (n.fn) {
        case Fn::cdiv:
          return a1 == 0 ? 0 : (a0 + a1 - 1) / a1;
        case Fn::min:
          return std::min(a0, a1);
        case Fn::max:
          return std::max(a0, a1);
        default:
          return a0 == a1 ? 1 : 0;  // eq
      }
    }
    default:
      break;
  }
  int64_t a = eval_node(*n.lhs, lookup), b = eval_node(*n.rhs, lookup);
  switch (n.op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    default:
      return b == 0 ? 0 : a / b;
  }
}

void collect(const Expr::Node& n, std::vector<std::string>& out) {
  if (n.op == 'v') out.push_back(n.name);
  for (const auto& a : n.args) collect(*a, out);
  if (n.lhs) collect(*n.lhs, out);
  if (n.rhs) collect(*n.rhs, out);
}
}  // namespace

Expr Expr::parse(const std::string& text, const std::string& where) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text, where).parse();
  return e;
}

int64_t Expr::eval(const std::map<std::string, int64_t>& vars) const {
  FRACSIM_ASSERT(root_ != nullptr, "evaluating an empty formula");
  return eval_node(*root_, [&](const Node& n) {
    auto it = vars.find(n.name);
    FRACSIM_ASSERT(it != vars.end(), "formula name '{}' unbound", n.name);
    return it->second;
  });
}

int64_t Expr::eval(const Vars& vars) const {
  FRACSIM_ASSERT(root_ != nullptr, "evaluating an empty formula");
  return eval_node(*root_, [&](const Node& n) { return vars.at(n.id); });
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (root_) collect(*root_, out);
  return out;
}

}  // namespace fracsim::isa
