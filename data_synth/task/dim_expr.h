#pragma once
// Integer expressions over a task's named dimensions: "B", "4096", "B*H", "ceil_div(N, 256)".
// Used for tensor shapes and attributes in task specs and for launch plans. Operators: + - * and
// / (floor division, as Python's //; "//" is accepted too), % (Python's modulo), unary minus,
// parentheses, min(a, b), max(a, b), ceil_div(a, b).
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace kforge {

using DimEnv = std::map<std::string, int64_t>;

class DimExpr {
 public:
  DimExpr();  // the constant 0
  static DimExpr constant(int64_t value);
  // Throws a spec error with the offending position on bad syntax.
  static DimExpr parse(std::string_view text);

  // Throws a spec error naming an unknown dimension, a division by zero or an overflow.
  int64_t eval(const DimEnv& env) const;
  bool is_constant() const;
  std::set<std::string> names() const;
  std::string str() const;     // canonical text, parses back to the same expression
  std::string python() const;  // the same expression in Python (// for division)

  struct Node;

 private:
  explicit DimExpr(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

// True for [A-Za-z_][A-Za-z0-9_]*.
bool is_identifier(std::string_view s);

}  // namespace kforge
