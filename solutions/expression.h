// Integer expressions for search-space constraints, derived values and launch geometry, so that a
// template's whole space lives as data beside it (kernel_templates/*.json) and a tuning config
// can add constraints without recompiling. Grammar (C precedence):
//   || && == != < <= > >= + - * / % unary(! -) ( ) min(a,b) max(a,b) integers identifiers
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tiletune {

using Variables = std::map<std::string, std::int64_t>;

class Expression {
 public:
  struct Program;  // the parsed expression as a flat list of steps
  Expression() = default;
  // Throws Error naming the text and the position of the syntax error.
  static Expression parse(const std::string& text);
  // Throws Error on an unknown identifier or division by zero.
  std::int64_t eval(const Variables& vars) const;
  // The same over a flat array, for evaluating one expression over many candidates without a map
  // or a string compare per name: the i-th name of names() is values[slots[i]], and slots[i] < 0
  // marks a name unknown here (evaluating it throws as eval(vars) does; a short-circuit may skip it).
  std::int64_t eval(const std::int64_t* values, const int* slots) const;
  // The same where only some values are known yet (known[slot]): the value, or nullopt where it
  // depends on one not known. Evaluates (and throws) only what eval would, in its order: an
  // unknown left side of && or || leaves the right side unevaluated.
  std::optional<std::int64_t> eval_known(const std::int64_t* values, const int* slots, const bool* known) const;
  // Every identifier the expression reads, each once, in order of first appearance.
  const std::vector<std::string>& names() const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const Program> program_;
};

}  // namespace tiletune
