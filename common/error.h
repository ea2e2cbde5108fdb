// One exception type for the whole project. Tools catch it at the top and exit non-zero with its
// message; the runtime's C API turns it into a status code, so nothing escapes into a host program.
#pragma once
#include <stdexcept>
#include <string>

namespace tiletune {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tiletune
