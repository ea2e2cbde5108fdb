// Integer expressions for search-space constraints, derived values and launch geometry, so that a
// template's whole space lives as data beside it (kernel_templates/*.json) and a tuning config
// can add constraints without recompiling. Grammar (C precedence):
//   || && == != < <= > >= + - * / % unary(! -) ( ) min(a,b) max(a,b) integers identifiers
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace tiletune {

using Variables = std::map<std::string, std::int64_t>;

class Expression {
 public:
  struct Node;
  Expression() = default;
  // Throws Error naming the text and the position of the syntax error.
  static Expression parse(const std::string& text);
  // Throws Error on an unknown identifier or division by zero.
  std::int64_t eval(const Variables& vars) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace tiletune
