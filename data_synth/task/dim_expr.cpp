#include "data_synth/task/dim_expr.h"

#include <cctype>
#include <limits>
#include <optional>
#include <vector>

#include "configs/error.h"

namespace kforge {

struct DimExpr::Node {
  enum Kind { number, name, neg, add, sub, mul, div, mod, min, max, ceil_div } kind;
  int64_t value = 0;
  std::string id;
  std::shared_ptr<const Node> a, b;
};

using NodeP = std::shared_ptr<const DimExpr::Node>;

namespace {

NodeP make(DimExpr::Node::Kind k, NodeP a = nullptr, NodeP b = nullptr) {
  auto n = std::make_shared<DimExpr::Node>();
  n->kind = k;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  NodeP parse_all() {
    if (s_.size() > kMaxDimExprChars)
      KFORGE_FAIL(spec, "dimension expression of " << s_.size() << " characters is longer than the limit of " << kMaxDimExprChars);
    NodeP e = expr();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    KFORGE_FAIL(spec, "bad dimension expression '" << s_ << "' at column " << pos_ + 1 << ": " << what);
  }
  // One level of nesting (a parenthesis, a call, a unary sign) for as long as it lives: the
  // recursion below is bounded by kMaxDimExprNesting.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDimExprNesting) p_.fail("nested deeper than " + std::to_string(kMaxDimExprNesting) + " levels");
    }
    ~Nest() { --p_.depth_; }
    Parser& p_;
  };
  // A node with operands; their count is capped so that evaluating and printing (recursive, and
  // so is freeing the tree) stay shallow.
  NodeP op(DimExpr::Node::Kind k, NodeP a, NodeP b = nullptr) {
    if (++operators_ > kMaxDimExprOperators) fail("more than " + std::to_string(kMaxDimExprOperators) + " operators");
    return make(k, std::move(a), std::move(b));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  NodeP expr() {
    NodeP left = term();
    for (;;) {
      if (eat('+'))
        left = op(DimExpr::Node::add, left, term());
      else if (eat('-'))
        left = op(DimExpr::Node::sub, left, term());
      else
        return left;
    }
  }
  NodeP term() {
    NodeP left = unary();
    for (;;) {
      if (eat('*'))
        left = op(DimExpr::Node::mul, left, unary());
      else if (eat('/')) {
        eat('/');  // "//" reads as "/"
        left = op(DimExpr::Node::div, left, unary());
      } else if (eat('%'))
        left = op(DimExpr::Node::mod, left, unary());
      else
        return left;
    }
  }
  NodeP unary() {
    if (eat('-')) {
      Nest nest(*this);
      return op(DimExpr::Node::neg, unary());
    }
    if (eat('+')) {
      Nest nest(*this);
      return unary();
    }
    return primary();
  }
  NodeP primary() {
    skip();
    if (pos_ >= s_.size()) fail("expression ends too soon");
    char c = s_[pos_];
    if (eat('(')) {
      Nest nest(*this);
      NodeP e = expr();
      if (!eat(')')) fail("expected ')'");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) fail("number too large");
        ++pos_;
      }
      auto n = std::make_shared<DimExpr::Node>();
      n->kind = DimExpr::Node::number;
      n->value = v;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string id(s_.substr(start, pos_ - start));
      if (eat('(')) {
        DimExpr::Node::Kind k;
        if (id == "min")
          k = DimExpr::Node::min;
        else if (id == "max")
          k = DimExpr::Node::max;
        else if (id == "ceil_div")
          k = DimExpr::Node::ceil_div;
        else
          fail("unknown function '" + id + "' (min, max, ceil_div)");
        Nest nest(*this);
        NodeP a = expr();
        if (!eat(',')) fail("expected ',' in " + id + "(a, b)");
        NodeP b = expr();
        if (!eat(')')) fail("expected ')' after " + id + "(a, b");
        return op(k, a, b);
      }
      auto n = std::make_shared<DimExpr::Node>();
      n->kind = DimExpr::Node::name;
      n->id = id;
      return n;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0, operators_ = 0;
};

// Floor division, Python's //, for b != 0; nullopt when the quotient is outside int64 (only
// INT64_MIN / -1).
std::optional<int64_t> floor_div(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Python's %: the sign of b, |r| < |b|. x % -1 is 0 (INT64_MIN % -1 traps in C++, so it is not
// computed); r + b cannot overflow since r and b have opposite signs there.
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// The smallest integer >= a / b, for b != 0; nullopt for INT64_MIN / -1.
std::optional<int64_t> ceil_div(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
  return q;
}

int64_t eval_node(const DimExpr::Node& n, const DimEnv& env, const std::string& text) {
  auto overflow = [&](const char* what) { KFORGE_FAIL(spec, "dimension expression '" << text << "' overflows 64 bits (" << what << ")"); };
  auto checked = [&](std::optional<int64_t> v, const char* what) {
    if (!v) overflow(what);
    return *v;
  };
  auto divisor = [&](int64_t b) {
    if (b == 0) KFORGE_FAIL(spec, "dimension expression '" << text << "' divides by zero");
    return b;
  };
  int64_t r = 0;
  switch (n.kind) {
    case DimExpr::Node::number:
      return n.value;
    case DimExpr::Node::name: {
      auto it = env.find(n.id);
      if (it == env.end()) KFORGE_FAIL(spec, "dimension expression '" << text << "' uses unknown dimension '" << n.id << "'");
      return it->second;
    }
    case DimExpr::Node::neg:
      if (__builtin_sub_overflow(int64_t{0}, eval_node(*n.a, env, text), &r)) overflow("negation");
      return r;
    default:
      break;
  }
  int64_t a = eval_node(*n.a, env, text), b = eval_node(*n.b, env, text);
  switch (n.kind) {
    case DimExpr::Node::add:
      if (__builtin_add_overflow(a, b, &r)) overflow("+");
      return r;
    case DimExpr::Node::sub:
      if (__builtin_sub_overflow(a, b, &r)) overflow("-");
      return r;
    case DimExpr::Node::mul:
      if (__builtin_mul_overflow(a, b, &r)) overflow("*");
      return r;
    case DimExpr::Node::div:
      return checked(floor_div(a, divisor(b)), "/");
    case DimExpr::Node::mod:
      return floor_mod(a, divisor(b));
    case DimExpr::Node::min:
      return a < b ? a : b;
    case DimExpr::Node::max:
      return a > b ? a : b;
    case DimExpr::Node::ceil_div:
      return checked(ceil_div(a, divisor(b)), "ceil_div");
    default:
      return 0;
  }
}

// Precedence for printing: 3 atoms/calls, 2 unary, 1 * / %, 0 + -.
int precedence(const DimExpr::Node& n) {
  switch (n.kind) {
    case DimExpr::Node::add:
    case DimExpr::Node::sub:
      return 0;
    case DimExpr::Node::mul:
    case DimExpr::Node::div:
    case DimExpr::Node::mod:
      return 1;
    case DimExpr::Node::neg:
      return 2;
    default:
      return 3;
  }
}

std::string print(const DimExpr::Node& n, bool python) {
  auto wrap = [&](const NodeP& c, int min_prec) {
    std::string s = print(*c, python);
    return precedence(*c) < min_prec ? "(" + s + ")" : s;
  };
  int p = precedence(n);
  switch (n.kind) {
    case DimExpr::Node::number:
      return std::to_string(n.value);
    case DimExpr::Node::name:
      return n.id;
    case DimExpr::Node::neg:
      return "-" + wrap(n.a, 2);
    case DimExpr::Node::add:
      return wrap(n.a, p) + " + " + wrap(n.b, p + 1);
    case DimExpr::Node::sub:
      return wrap(n.a, p) + " - " + wrap(n.b, p + 1);
    case DimExpr::Node::mul:
      return wrap(n.a, p) + "*" + wrap(n.b, p + 1);
    case DimExpr::Node::div:
      return wrap(n.a, p) + (python ? "//" : "/") + wrap(n.b, p + 1);
    case DimExpr::Node::mod:
      return wrap(n.a, p) + "%" + wrap(n.b, p + 1);
    case DimExpr::Node::min:
      return "min(" + print(*n.a, python) + ", " + print(*n.b, python) + ")";
    case DimExpr::Node::max:
      return "max(" + print(*n.a, python) + ", " + print(*n.b, python) + ")";
    case DimExpr::Node::ceil_div:
      if (python) return "(-(-" + wrap(n.a, 2) + " // " + wrap(n.b, 2) + "))";
      return "ceil_div(" + print(*n.a, false) + ", " + print(*n.b, false) + ")";
  }
  return "";
}

void collect(const DimExpr::Node& n, std::set<std::string>& out) {
  if (n.kind == DimExpr::Node::name) out.insert(n.id);
  if (n.a) collect(*n.a, out);
  if (n.b) collect(*n.b, out);
}

}  // namespace

DimExpr::DimExpr() : DimExpr(constant(0)) {}

DimExpr DimExpr::constant(int64_t value) {
  auto n = std::make_shared<Node>();
  if (value == std::numeric_limits<int64_t>::min()) {  // -INT64_MIN does not exist: -INT64_MAX - 1
    auto one = std::make_shared<Node>();
    one->kind = Node::number;
    one->value = 1;
    return DimExpr(make(Node::sub, constant(value + 1).root_, one));
  }
  if (value < 0) {
    n->kind = Node::number;
    n->value = -value;
    return DimExpr(make(Node::neg, n));
  }
  n->kind = Node::number;
  n->value = value;
  return DimExpr(n);
}

DimExpr DimExpr::parse(std::string_view text) { return DimExpr(Parser(text).parse_all()); }

int64_t DimExpr::eval(const DimEnv& env) const { return eval_node(*root_, env, str()); }

bool DimExpr::is_constant() const { return names().empty(); }

std::set<std::string> DimExpr::names() const {
  std::set<std::string> out;
  collect(*root_, out);
  return out;
}

std::string DimExpr::str() const { return print(*root_, false); }
std::string DimExpr::python() const { return print(*root_, true); }

}  // namespace kforge
