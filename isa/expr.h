// Integer arithmetic formulas over named dims and attributes, as written in isa/ops/*.yaml
// (work: "2*M*N*K"). Supports + - * / (integer, truncating), parentheses, literals, names, and
// the functions cdiv(a, b) (a/b rounded up), min(a, b), max(a, b), eq(a, b) (1 when a == b, else
// 0: a `when:` on an enum attribute's value), clog2(a) (ceil(log2 a), 0 for a <= 1).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fracsim::isa {

class Expr {
 public:
  Expr() = default;
  // Throws ConfigError("<where>: ...") on a syntax error.
  static Expr parse(const std::string& text, const std::string& where);
  int64_t eval(const std::map<std::string, int64_t>& vars) const;
  const std::string& text() const { return text_; }
  // Every name the formula mentions.
  std::vector<std::string> names() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace fracsim::isa
