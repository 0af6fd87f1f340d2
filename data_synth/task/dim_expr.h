#pragma once
// Integer expressions over a task's named dimensions: "B", "4096", "B*H", "ceil_div(N, 256)".
// Used for tensor shapes and attributes in task specs and for launch plans. Operators: + - * and
// / (floor division, as Python's //; "//" is accepted too), % (Python's modulo), unary minus,
// parentheses, min(a, b), max(a, b), ceil_div(a, b).
//
// The text may come from a policy (launch.yaml), so nothing in it can crash the process: the
// length, the nesting and the number of operators are capped before anything recurses (the caps
// below), and every operation is checked, INT64_MIN / -1 and the negation of INT64_MIN included.
// Every refusal is a spec error.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "configs/identifier.h"  // is_identifier, which the callers of dimension names use

namespace kforge {

using DimEnv = std::map<std::string, int64_t>;

// Caps on an expression's text. Nesting counts parentheses, function calls and unary signs;
// operators count every + - * / % and call. Real shapes use a handful of each.
constexpr size_t kMaxDimExprChars = 4096;
constexpr int kMaxDimExprNesting = 64;
constexpr int kMaxDimExprOperators = 256;

class DimExpr {
 public:
  DimExpr();  // the constant 0
  static DimExpr constant(int64_t value);
  // Throws a spec error with the offending position on bad syntax.
  static DimExpr parse(std::string_view text);

  // Throws a spec error naming an unknown dimension, a division by zero or an overflow (any
  // result outside int64, INT64_MIN / -1 included; x % -1 is 0, as in Python).
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

}  // namespace kforge
