#include "solutions/expression.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "common/error.h"

namespace tiletune {

struct Expression::Node {
  enum Kind { Number, Variable, Unary, Binary, Call } kind;
  std::int64_t value = 0;
  std::string name;  // variable, operator or function
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const Expression::Node>;
using Node = Expression::Node;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  NodePtr parse() {
    NodePtr n = binary(0);
    skip();
    if (pos_ != t_.size()) fail("unexpected '" + t_.substr(pos_, 1) + "'");
    return n;
  }

 private:
  // Binary operators by precedence level, lowest first.
  static const std::vector<std::vector<std::string>>& levels() {
    static const std::vector<std::vector<std::string>> l = {
        {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}};
    return l;
  }

  NodePtr binary(size_t level) {
    if (level == levels().size()) return unary();
    NodePtr lhs = binary(level + 1);
    for (;;) {
      skip();
      std::string op;
      for (const auto& candidate : levels()[level])
        if (t_.compare(pos_, candidate.size(), candidate) == 0) {
          op = candidate;
          break;
        }
      if (op.empty()) return lhs;
      pos_ += op.size();
      NodePtr rhs = binary(level + 1);
      auto n = std::make_shared<Node>();
      n->kind = Node::Binary;
      n->name = op;
      n->args = {lhs, rhs};
      lhs = n;
    }
  }

  NodePtr unary() {
    skip();
    if (pos_ < t_.size() && (t_[pos_] == '!' || t_[pos_] == '-')) {
      auto n = std::make_shared<Node>();
      n->kind = Node::Unary;
      n->name = std::string(1, t_[pos_++]);
      Nest nest(*this);
      n->args = {unary()};
      return n;
    }
    return primary();
  }

  // Parentheses, calls and unary operators recurse: their nesting is bounded so that no input
  // overflows the stack (here, in eval and in the tree's destruction).
  static constexpr int kMaxNesting = 200;
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting) p.fail("nested deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Nest() { --p.nesting_; }
  };

  NodePtr primary() {
    skip();
    if (pos_ >= t_.size()) fail("unexpected end");
    char c = t_[pos_];
    auto n = std::make_shared<Node>();
    if (c == '(') {
      ++pos_;
      Nest nest(*this);
      NodePtr inner = binary(0);
      expect(')');
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
      n->kind = Node::Number;
      auto [end, ec] = std::from_chars(t_.data() + start, t_.data() + pos_, n->value);
      if (ec != std::errc()) fail("integer literal out of range");
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_')) ++pos_;
      n->name = t_.substr(start, pos_ - start);
      skip();
      if (pos_ < t_.size() && t_[pos_] == '(') {
        if (n->name != "min" && n->name != "max") fail("unknown function '" + n->name + "'");
        ++pos_;
        Nest nest(*this);
        n->kind = Node::Call;
        n->args.push_back(binary(0));
        expect(',');
        n->args.push_back(binary(0));
        expect(')');
        return n;
      }
      n->kind = Node::Variable;
      return n;
    }
    fail(std::string("unexpected '") + c + "'");
  }

  void skip() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip();
    if (pos_ >= t_.size() || t_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw Error("expression \"" + t_ + "\": " + what + " at position " + std::to_string(pos_));
  }

  const std::string& t_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

std::int64_t eval_node(const Node& n, const Variables& vars, const std::string& text) {
  switch (n.kind) {
    case Node::Number: return n.value;
    case Node::Variable: {
      auto it = vars.find(n.name);
      if (it == vars.end()) throw Error("expression \"" + text + "\": unknown name '" + n.name + "'");
      return it->second;
    }
    case Node::Unary: {
      std::int64_t v = eval_node(*n.args[0], vars, text);
      return n.name == "!" ? !v : -v;
    }
    case Node::Call: {
      std::int64_t a = eval_node(*n.args[0], vars, text), b = eval_node(*n.args[1], vars, text);
      return n.name == "min" ? std::min(a, b) : std::max(a, b);
    }
    case Node::Binary: break;
  }
  const std::string& op = n.name;
  std::int64_t a = eval_node(*n.args[0], vars, text);
  if (op == "&&" && !a) return 0;  // short-circuit so guards like "X > 0 && Y % X == 0" work
  if (op == "||" && a) return 1;
  std::int64_t b = eval_node(*n.args[1], vars, text);
  std::int64_t r = 0;
  auto overflow = [&] { return Error("expression \"" + text + "\": integer overflow in " + op); };
  if (op == "+") return __builtin_add_overflow(a, b, &r) ? throw overflow() : r;
  if (op == "-") return __builtin_sub_overflow(a, b, &r) ? throw overflow() : r;
  if (op == "*") return __builtin_mul_overflow(a, b, &r) ? throw overflow() : r;
  if (op == "/" || op == "%") {
    if (b == 0) throw Error("expression \"" + text + "\": division by zero");
    if (b == -1 && a == INT64_MIN) throw overflow();
    return op == "/" ? a / b : a % b;
  }
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "&&" || op == "||") return b != 0;
  throw Error("expression \"" + text + "\": bad operator " + op);
}

}  // namespace

Expression Expression::parse(const std::string& text) {
  // A chain of binary operators nests as deep as it is long: bounded by the length.
  constexpr std::size_t kMaxLength = 4096;
  if (text.size() > kMaxLength)
    throw Error("expression of " + std::to_string(text.size()) + " characters: at most " + std::to_string(kMaxLength));
  Expression e;
  e.text_ = text;
  e.root_ = Parser(e.text_).parse();
  return e;
}

std::int64_t Expression::eval(const Variables& vars) const {
  if (!root_) throw Error("empty expression");
  return eval_node(*root_, vars, text_);
}

}  // namespace tiletune
