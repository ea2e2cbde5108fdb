#include "solutions/expression.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include "common/error.h"

namespace tiletune {

// Steps refer to their operands by index, so evaluation walks one vector and switches on an enum:
// enumeration evaluates a template's expressions for every candidate, millions of times.
struct Expression::Program {
  enum class Op : std::uint8_t { Number, Name, Not, Neg, Min, Max, Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod };
  struct Step {
    Op op;
    int a = -1, b = -1;      // operand steps
    std::int64_t value = 0;  // Number: the literal; Name: the index into names
  };
  std::vector<Step> steps;
  std::vector<std::string> names;
  int root = -1;
};

namespace {

using Program = Expression::Program;
using Op = Program::Op;

class Parser {
 public:
  Parser(const std::string& t, Program& out) : t_(t), p_(out) {}

  void parse() {
    p_.root = binary(0);
    skip();
    if (pos_ != t_.size()) fail("unexpected '" + t_.substr(pos_, 1) + "'");
  }

 private:
  // Binary operators by precedence level, lowest first (a level's longer spellings first).
  static const std::vector<std::vector<std::pair<std::string, Op>>>& levels() {
    static const std::vector<std::vector<std::pair<std::string, Op>>> l = {
        {{"||", Op::Or}},
        {{"&&", Op::And}},
        {{"==", Op::Eq}, {"!=", Op::Ne}},
        {{"<=", Op::Le}, {">=", Op::Ge}, {"<", Op::Lt}, {">", Op::Gt}},
        {{"+", Op::Add}, {"-", Op::Sub}},
        {{"*", Op::Mul}, {"/", Op::Div}, {"%", Op::Mod}}};
    return l;
  }

  int add(Op op, int a = -1, int b = -1, std::int64_t value = 0) {
    p_.steps.push_back({op, a, b, value});
    return int(p_.steps.size()) - 1;
  }

  int binary(size_t level) {
    if (level == levels().size()) return unary();
    int lhs = binary(level + 1);
    for (;;) {
      skip();
      const std::pair<std::string, Op>* op = nullptr;
      for (const auto& candidate : levels()[level])
        if (t_.compare(pos_, candidate.first.size(), candidate.first) == 0) {
          op = &candidate;
          break;
        }
      if (!op) return lhs;
      pos_ += op->first.size();
      int rhs = binary(level + 1);
      lhs = add(op->second, lhs, rhs);
    }
  }

  int unary() {
    skip();
    if (pos_ < t_.size() && (t_[pos_] == '!' || t_[pos_] == '-')) {
      const Op op = t_[pos_++] == '!' ? Op::Not : Op::Neg;
      Nest nest(*this);
      return add(op, unary());
    }
    return primary();
  }

  // Parentheses, calls and unary operators recurse: their nesting is bounded so that no input
  // overflows the stack (here and in eval).
  static constexpr int kMaxNesting = 200;
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting) p.fail("nested deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Nest() { --p.nesting_; }
  };

  int primary() {
    skip();
    if (pos_ >= t_.size()) fail("unexpected end");
    char c = t_[pos_];
    if (c == '(') {
      ++pos_;
      Nest nest(*this);
      int inner = binary(0);
      expect(')');
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(t_.data() + start, t_.data() + pos_, value);
      if (ec != std::errc()) fail("integer literal out of range");
      return add(Op::Number, -1, -1, value);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_')) ++pos_;
      std::string name = t_.substr(start, pos_ - start);
      skip();
      if (pos_ < t_.size() && t_[pos_] == '(') {
        if (name != "min" && name != "max") fail("unknown function '" + name + "'");
        ++pos_;
        Nest nest(*this);
        int a = binary(0);
        expect(',');
        int b = binary(0);
        expect(')');
        return add(name == "min" ? Op::Min : Op::Max, a, b);
      }
      auto it = std::find(p_.names.begin(), p_.names.end(), name);
      if (it == p_.names.end()) it = p_.names.insert(it, std::move(name));
      return add(Op::Name, -1, -1, it - p_.names.begin());
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
  Program& p_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

const char* spelling(Op op) {  // of the operators that can overflow
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Mod: return "%";
    default: return "?";
  }
}

[[noreturn]] void unknown_name(const Program& p, std::int64_t i, const std::string& text) {
  throw Error("expression \"" + text + "\": unknown name '" + p.names[i] + "'");
}

// A binary operator (or min, max) on its evaluated operands, && and || past their short-circuit.
std::int64_t apply(Op op, std::int64_t a, std::int64_t b, const std::string& text) {
  std::int64_t r = 0;
  auto overflow = [&] { return Error("expression \"" + text + "\": integer overflow in " + spelling(op)); };
  switch (op) {
    case Op::Min: return std::min(a, b);
    case Op::Max: return std::max(a, b);
    case Op::Add: return __builtin_add_overflow(a, b, &r) ? throw overflow() : r;
    case Op::Sub: return __builtin_sub_overflow(a, b, &r) ? throw overflow() : r;
    case Op::Mul: return __builtin_mul_overflow(a, b, &r) ? throw overflow() : r;
    case Op::Div:
    case Op::Mod:
      if (b == 0) throw Error("expression \"" + text + "\": division by zero");
      if (b == -1 && a == INT64_MIN) throw overflow();
      return op == Op::Div ? a / b : a % b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    default: return b != 0;
  }
}

// `read(i)` points at the value of the program's i-th name, or is null where the name is unknown.
template <class Read>
std::int64_t run(const Program& p, int i, const Read& read, const std::string& text) {
  const Program::Step& s = p.steps[i];
  switch (s.op) {
    case Op::Number: return s.value;
    case Op::Name: {
      if (const std::int64_t* v = read(s.value)) return *v;
      unknown_name(p, s.value, text);
    }
    case Op::Not: return !run(p, s.a, read, text);
    case Op::Neg: return -run(p, s.a, read, text);
    default: break;
  }
  std::int64_t a = run(p, s.a, read, text);
  if (s.op == Op::And && !a) return 0;  // short-circuit so guards like "X > 0 && Y % X == 0" work
  if (s.op == Op::Or && a) return 1;
  return apply(s.op, a, run(p, s.b, read, text), text);
}

// The same where some values are not known yet (known[slot] == 0): nullopt as soon as the
// evaluation reaches one, so that it evaluates (and throws) only what run would, in its order.
std::optional<std::int64_t> run_known(const Program& p, int i, const std::int64_t* values, const int* slots,
                                      const bool* known, const std::string& text) {
  const Program::Step& s = p.steps[i];
  auto operand = [&](int j) { return run_known(p, j, values, slots, known, text); };
  switch (s.op) {
    case Op::Number: return s.value;
    case Op::Name: {
      const int slot = slots[s.value];
      if (slot < 0) unknown_name(p, s.value, text);
      return known[slot] ? std::optional(values[slot]) : std::nullopt;
    }
    case Op::Not:
      if (auto a = operand(s.a)) return !*a;
      return std::nullopt;
    case Op::Neg:
      if (auto a = operand(s.a)) return -*a;
      return std::nullopt;
    default: break;
  }
  const std::optional<std::int64_t> a = operand(s.a);
  if (!a) return std::nullopt;
  if (s.op == Op::And && !*a) return 0;
  if (s.op == Op::Or && *a) return 1;
  const std::optional<std::int64_t> b = operand(s.b);
  if (!b) return std::nullopt;
  return apply(s.op, *a, *b, text);
}

}  // namespace

Expression Expression::parse(const std::string& text) {
  // A chain of binary operators nests as deep as it is long: bounded by the length.
  constexpr std::size_t kMaxLength = 4096;
  if (text.size() > kMaxLength)
    throw Error("expression of " + std::to_string(text.size()) + " characters: at most " + std::to_string(kMaxLength));
  Expression e;
  e.text_ = text;
  auto program = std::make_shared<Program>();
  Parser(e.text_, *program).parse();
  e.program_ = std::move(program);
  return e;
}

std::int64_t Expression::eval(const Variables& vars) const {
  if (!program_) throw Error("empty expression");
  const Program& p = *program_;
  return run(
      p, p.root,
      [&](std::int64_t i) -> const std::int64_t* {
        auto it = vars.find(p.names[i]);
        return it == vars.end() ? nullptr : &it->second;
      },
      text_);
}

std::int64_t Expression::eval(const std::int64_t* values, const int* slots) const {
  if (!program_) throw Error("empty expression");
  return run(
      *program_, program_->root,
      [&](std::int64_t i) -> const std::int64_t* { return slots[i] < 0 ? nullptr : values + slots[i]; }, text_);
}

std::optional<std::int64_t> Expression::eval_known(const std::int64_t* values, const int* slots,
                                                   const bool* known) const {
  if (!program_) throw Error("empty expression");
  return run_known(*program_, program_->root, values, slots, known, text_);
}

const std::vector<std::string>& Expression::names() const {
  static const std::vector<std::string> none;
  return program_ ? program_->names : none;
}

}  // namespace tiletune
