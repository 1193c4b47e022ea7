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

// A formula name's id, the same for the whole process: formulas resolve their names to ids when
// parsed, so that the hot paths (leaf cycles, extension steps) look values up by index instead
// of building maps of names.
int var_id(const std::string& name);
const std::string& var_name(int id);

// Values of formula names by id (var_id).
class Vars {
 public:
  Vars();
  void set(int id, int64_t value) {
    if (static_cast<size_t>(id) >= value_.size()) grow(id);
    value_[id] = value;
    bound_[id] = 1;
  }
  void erase(int id) {
    if (static_cast<size_t>(id) < bound_.size()) bound_[id] = 0;
  }
  // InternalError naming the formula name when it has no value.
  int64_t at(int id) const {
    if (static_cast<size_t>(id) >= bound_.size() || !bound_[id]) unbound(id);
    return value_[id];
  }

 private:
  void grow(int id);
  [[noreturn]] void unbound(int id) const;
  std::vector<int64_t> value_;
  std::vector<uint8_t> bound_;
};

class Expr {
 public:
  Expr() = default;
  // Throws ConfigError("<where>: ...") on a syntax error.
  static Expr parse(const std::string& text, const std::string& where);
  int64_t eval(const std::map<std::string, int64_t>& vars) const;
  int64_t eval(const Vars& vars) const;
  const std::string& text() const { return text_; }
  // Every name the formula mentions.
  std::vector<std::string> names() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace fracsim::isa
