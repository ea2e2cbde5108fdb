#include "common/env.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/error.h"

namespace tiletune {
namespace {

[[noreturn]] void refuse(const char* name, const std::string& value, const std::string& takes) {
  throw Error(std::string(name) + "='" + value.substr(0, 200) + "': " + takes);
}

std::string range(double lo, double hi) {
  auto text = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return text(lo) + " to " + text(hi);
}

}  // namespace

std::optional<std::string> env_text(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

long long env_integer(const char* name, long long fallback, long long lo, long long hi) {
  const auto v = env_text(name);
  if (!v) return fallback;
  // from_chars: the whole text, no sign but '-', no blanks, whatever the locale.
  long long n = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < lo || n > hi)
    refuse(name, *v, "takes a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return n;
}

double env_number(const char* name, double fallback, double lo, double hi) {
  const auto v = env_text(name);
  if (!v) return fallback;
  double x = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(x) || x < lo || x > hi)
    refuse(name, *v, "takes a number from " + range(lo, hi));
  return x;
}

bool env_switch(const char* name, bool fallback) {
  const auto v = env_text(name);
  if (!v) return fallback;
  for (const char* yes : {"1", "on", "yes", "true"})
    if (*v == yes) return true;
  for (const char* no : {"0", "off", "no", "false"})
    if (*v == no) return false;
  refuse(name, *v, "takes 1, on, yes or true, or 0, off, no or false");
}

}  // namespace tiletune
