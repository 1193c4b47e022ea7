#include "isa/expr.h"

#include <algorithm>
#include <cctype>

#include "isa/error.h"

namespace fracsim::isa {

struct Expr::Node {
  char op = 0;  // 0: literal, 'v': name, 'f': function call, else a binary operator
  int64_t value = 0;
  std::string name;
  std::shared_ptr<const Node> lhs, rhs;
  std::vector<std::shared_ptr<const Node>> args;  // 'f'
};

namespace {
// The functions a formula may call, with their argument counts.
const std::map<std::string, size_t>& functions() {
  static const std::map<std::string, size_t> f = {
      {"cdiv", 2}, {"min", 2}, {"max", 2}, {"eq", 2}, {"clog2", 1}};
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
      skip();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        auto f = functions().find(n->name);
        if (f == functions().end()) fail("unknown function '" + n->name + "'");
        n->op = 'f';
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
        if (n->args.size() != f->second)
          fail(fmt::format("{} takes {} argument(s), got {}", n->name, f->second, n->args.size()));
      }
      return n;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

int64_t eval_node(const Expr::Node& n, const std::map<std::string, int64_t>& vars) {
  switch (n.op) {
    case 0:
      return n.value;
    case 'v': {
      auto it = vars.find(n.name);
      FRACSIM_ASSERT(it != vars.end(), "formula name '{}' unbound", n.name);
      return it->second;
    }
    case 'f': {
      std::vector<int64_t> a;
      for (const auto& arg : n.args) a.push_back(eval_node(*arg, vars));
      if (n.name == "cdiv") return a[1] == 0 ? 0 : (a[0] + a[1] - 1) / a[1];
      if (n.name == "min") return std::min(a[0], a[1]);
      if (n.name == "max") return std::max(a[0], a[1]);
      if (n.name == "eq") return a[0] == a[1] ? 1 : 0;
      int64_t bits = 0;  // clog2
      while ((int64_t{1} << bits) < a[0]) ++bits;
      return bits;
    }
    default:
      break;
  }
  int64_t a = eval_node(*n.lhs, vars), b = eval_node(*n.rhs, vars);
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
  return eval_node(*root_, vars);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (root_) collect(*root_, out);
  return out;
}

}  // namespace fracsim::isa
