// Settings read from the environment, checked: a value that is not what the variable takes is an
// Error naming the variable, the value and what it takes, never a silent default or a truncation.
#pragma once
#include <optional>
#include <string>

namespace tiletune {

// The value, or nothing when unset or empty.
std::optional<std::string> env_text(const char* name);
// An integer in [lo, hi]; `fallback` when unset or empty.
long long env_integer(const char* name, long long fallback, long long lo, long long hi);
// A finite number in [lo, hi]; `fallback` when unset or empty.
double env_number(const char* name, double fallback, double lo, double hi);
// A switch: 1, on, yes, true or 0, off, no, false; `fallback` when unset or empty.
bool env_switch(const char* name, bool fallback);

}  // namespace tiletune
