// Tests of the constraint/launch expression language (solutions/expression.h): precedence,
// associativity, short-circuit, variables, and the errors it reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "solutions/expression.h"
#include "tests/test_util.h"

using namespace tiletune;

using namespace tiletune::testing;

namespace {

std::int64_t ev(const std::string& text, const Variables& vars = {}) { return Expression::parse(text).eval(vars); }


TEST(Expression, Literals) {
  EXPECT_EQ(ev("0"), 0);
  EXPECT_EQ(ev("42"), 42);
  EXPECT_EQ(ev("  7 "), 7);
  EXPECT_EQ(ev("123456789012"), 123456789012);
}

TEST(Expression, Precedence) {
  EXPECT_EQ(ev("2+3*4"), 14);
  EXPECT_EQ(ev("2*3+4"), 10);
  EXPECT_EQ(ev("(2+3)*4"), 20);
  EXPECT_EQ(ev("20-6/2"), 17);
  EXPECT_EQ(ev("1+10%4"), 3);
  EXPECT_EQ(ev("1 + 2 < 4"), 1);   // + binds tighter than <
  EXPECT_EQ(ev("1 + 2 < 3"), 0);
  EXPECT_EQ(ev("1 == 2 < 3"), 1);  // < binds tighter than ==: 1 == (2 < 3)
  EXPECT_EQ(ev("2 < 3 == 1"), 1);
  EXPECT_EQ(ev("1 || 0 && 0"), 1);  // && binds tighter than ||
  EXPECT_EQ(ev("(1 || 0) && 0"), 0);
  EXPECT_EQ(ev("!0 && 1 || 0"), 1);
  EXPECT_EQ(ev("!1 && 1 || 0"), 0);
  EXPECT_EQ(ev("!(0 || 1)"), 0);
  EXPECT_EQ(ev("3 == 3 && 2 != 2"), 0);
  EXPECT_EQ(ev("1 + 1 == 2 && 6 / 3 == 2"), 1);
}

TEST(Expression, LeftAssociativity) {
  EXPECT_EQ(ev("10-4-3"), 3);
  EXPECT_EQ(ev("64/4/2"), 8);
  EXPECT_EQ(ev("100%7%3"), 2);
  EXPECT_EQ(ev("2*3%4"), 2);   // (2*3)%4, not 2*(3%4)=6
  EXPECT_EQ(ev("7%4*2"), 6);   // (7%4)*2
  EXPECT_EQ(ev("3 > 2 > 1"), 0);  // (3 > 2) > 1 = 1 > 1
  EXPECT_EQ(ev("1 - 2 + 3"), 2);
}

TEST(Expression, IntegerDivisionTruncatesTowardZero) {
  EXPECT_EQ(ev("7/2"), 3);
  EXPECT_EQ(ev("-7/2"), -3);
  EXPECT_EQ(ev("-3%2"), -1);  // unary minus binds tighter: (-3) % 2
  EXPECT_EQ(ev("7%-3"), 1);
}

TEST(Expression, Unary) {
  EXPECT_EQ(ev("-3"), -3);
  EXPECT_EQ(ev("--3"), 3);
  EXPECT_EQ(ev("2*-3"), -6);
  EXPECT_EQ(ev("-(2+3)*2"), -10);
  EXPECT_EQ(ev("!5"), 0);
  EXPECT_EQ(ev("!!5"), 1);
  EXPECT_EQ(ev("!0"), 1);
  EXPECT_EQ(ev("-2 < -1"), 1);
}

TEST(Expression, Comparisons) {
  EXPECT_EQ(ev("2 < 3"), 1);
  EXPECT_EQ(ev("3 < 3"), 0);
  EXPECT_EQ(ev("3 <= 3"), 1);
  EXPECT_EQ(ev("4 <= 3"), 0);
  EXPECT_EQ(ev("4 > 3"), 1);
  EXPECT_EQ(ev("3 > 3"), 0);
  EXPECT_EQ(ev("3 >= 3"), 1);
  EXPECT_EQ(ev("2 >= 3"), 0);
  EXPECT_EQ(ev("5 == 5"), 1);
  EXPECT_EQ(ev("5 == 6"), 0);
  EXPECT_EQ(ev("5 != 6"), 1);
  EXPECT_EQ(ev("5 != 5"), 0);
}

TEST(Expression, LogicalResultsAreZeroOrOne) {
  EXPECT_EQ(ev("2 && 3"), 1);
  EXPECT_EQ(ev("0 || 5"), 1);
  EXPECT_EQ(ev("7 || 0"), 1);
  EXPECT_EQ(ev("0 || 0"), 0);
  EXPECT_EQ(ev("-1 && -1"), 1);
}

TEST(Expression, MinMaxAndNesting) {
  EXPECT_EQ(ev("min(3, 5)"), 3);
  EXPECT_EQ(ev("max(3, 5)"), 5);
  EXPECT_EQ(ev("min(-3, 2)"), -3);
  EXPECT_EQ(ev("min(3, max(1, 2))"), 2);
  EXPECT_EQ(ev("max(min(8, 16 / 2), 4) * 2"), 16);
  EXPECT_EQ(ev("min( 1 + 2 , 2 * 2 )"), 3);
  EXPECT_EQ(ev("((2+3)*(4-1))"), 15);
  EXPECT_EQ(ev("(((((1)))))"), 1);
  EXPECT_EQ(ev("((1 + (2 * (3 + (4 * 5)))) - 7) / 2"), 20);
}

TEST(Expression, Variables) {
  Variables v{{"MT0", 128}, {"TT0", 8}, {"DEV_MAX_THREADS", 1024}, {"_x", -4}, {"a1b2", 3}};
  EXPECT_EQ(ev("MT0 / TT0", v), 16);
  EXPECT_EQ(ev("MT0 % TT0 == 0", v), 1);
  EXPECT_EQ(ev("MT0 * TT0 <= DEV_MAX_THREADS", v), 1);
  EXPECT_EQ(ev("_x * a1b2", v), -12);
  EXPECT_EQ(ev("min(MT0, DEV_MAX_THREADS) + max(_x, a1b2)", v), 131);
  // The same parsed expression re-evaluated with other values.
  Expression e = Expression::parse("MT0 / TT0");
  EXPECT_EQ(e.eval({{"MT0", 64}, {"TT0", 4}}), 16);
  EXPECT_EQ(e.eval({{"MT0", 64}, {"TT0", 8}}), 8);
  EXPECT_EQ(e.text(), "MT0 / TT0");
}

// Random variable values against the same formulas written in C++.
TEST(Expression, RandomValuesMatchCxx) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> dist(-1000, 1000);
  struct Case {
    const char* text;
    std::function<std::int64_t(std::int64_t, std::int64_t, std::int64_t)> f;
  };
  const std::vector<Case> cases = {
      {"a + b * c", [](auto a, auto b, auto c) { return a + b * c; }},
      {"a - b - c", [](auto a, auto b, auto c) { return a - b - c; }},
      {"a * b / c", [](auto a, auto b, auto c) { return a * b / c; }},
      {"a / c % b", [](auto a, auto b, auto c) { return a / c % b; }},
      {"-a % c", [](auto a, auto, auto c) { return -a % c; }},
      {"a < b == b < c", [](auto a, auto b, auto c) { return std::int64_t((a < b) == (b < c)); }},
      {"a <= b && b <= c || a > c", [](auto a, auto b, auto c) { return std::int64_t((a <= b && b <= c) || a > c); }},
      {"!(a - b) || c >= a", [](auto a, auto b, auto c) { return std::int64_t(!(a - b) || c >= a); }},
      {"min(a, b) * max(b, c) - (a + c)", [](auto a, auto b, auto c) { return std::min(a, b) * std::max(b, c) - (a + c); }},
      {"a != c && (b + c) / c != 0", [](auto a, auto b, auto c) { return std::int64_t(a != c && (b + c) / c != 0); }},
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::int64_t a = dist(rng), b = dist(rng), c = dist(rng);
    if (b == 0) b = 7;
    if (c == 0) c = -3;
    Variables v{{"a", a}, {"b", b}, {"c", c}};
    for (const auto& k : cases)
      ASSERT_EQ(ev(k.text, v), k.f(a, b, c)) << k.text << " with a=" << a << " b=" << b << " c=" << c;
  }
}

TEST(Expression, ShortCircuit) {
  EXPECT_NO_THROW(EXPECT_EQ(ev("0 && 1/0"), 0));
  EXPECT_NO_THROW(EXPECT_EQ(ev("1 || 1/0"), 1));
  EXPECT_NO_THROW(EXPECT_EQ(ev("0 && UNDEFINED"), 0));
  EXPECT_NO_THROW(EXPECT_EQ(ev("1 || UNDEFINED"), 1));
  // The guard idiom the templates use.
  EXPECT_EQ(ev("X > 0 && Y % X == 0", {{"X", 0}, {"Y", 5}}), 0);
  EXPECT_EQ(ev("X > 0 && Y % X == 0", {{"X", 5}, {"Y", 10}}), 1);
  // No short-circuit when the left side does not decide.
  EXPECT_THROW(ev("1 && 1/0"), Error);
  EXPECT_THROW(ev("0 || 1/0"), Error);
}

TEST(Expression, DivisionByZeroThrows) {
  for (const char* text : {"1/0", "5 % 0", "5 % (2-2)", "X / Y", "min(1, 4 / (X - X))"}) {
    std::string msg = error_of([&] { ev(text, {{"X", 3}, {"Y", 0}}); });
    EXPECT_NE(msg.find("division by zero"), std::string::npos) << text << ": " << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << "message should quote the expression: " << msg;
  }
}

TEST(Expression, UnknownIdentifierNamed) {
  std::string msg = error_of([] { ev("MT0 + THREADZ * 2", {{"MT0", 1}}); });
  EXPECT_NE(msg.find("THREADZ"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown"), std::string::npos) << msg;
  // The variable that does exist is not blamed.
  msg = error_of([] { ev("A + B", {{"B", 1}}); });
  EXPECT_NE(msg.find("'A'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'B'"), std::string::npos) << msg;
}

TEST(Expression, SyntaxErrorsNamePosition) {
  struct Case {
    const char* text;
    const char* what;
    int pos;
  };
  const std::vector<Case> cases = {
      {"2 +", "unexpected end", 3},
      {"", "unexpected end", 0},
      {"(1+2", "expected ')'", 4},
      {"1 2", "unexpected '2'", 2},
      {"1 + * 2", "unexpected '*'", 4},
      {"3 $ 4", "unexpected '$'", 2},
      {"a = b", "unexpected '='", 2},
      {"1 & 2", "unexpected '&'", 2},
      {"min(1)", "expected ','", 5},
      {"max(1, 2", "expected ')'", 8},
      {"foo(1, 2)", "unknown function 'foo'", 3},
      {"(1 + 2))", "unexpected ')'", 7},
  };
  for (const auto& c : cases) {
    std::string msg = error_of([&] { Expression::parse(c.text); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << "\"" << c.text << "\": " << msg;
    EXPECT_NE(msg.find("at position " + std::to_string(c.pos)), std::string::npos) << "\"" << c.text << "\": " << msg;
    EXPECT_NE(msg.find(std::string("\"") + c.text + "\""), std::string::npos) << "message should quote the text: " << msg;
  }
}

TEST(Expression, EmptyExpressionEvalThrows) {
  Expression e;
  EXPECT_THROW(e.eval({}), Error);
}

// BUG (solutions/expression.cpp, primary()): std::stoll throws std::out_of_range for a literal
// that does not fit in 64 bits, instead of the documented tiletune::Error naming the position.
// Disabled until fixed; enable to reproduce.
TEST(Expression, HugeLiteralIsASyntaxError) {
  std::string msg = error_of([] { Expression::parse("1 + 99999999999999999999"); });
  EXPECT_NE(msg.find("position"), std::string::npos) << msg;
}

}  // namespace
