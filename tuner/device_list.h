// Which devices a sweep measures on: `tune --devices all|0,1,...`.
#pragma once
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::tuner {

// "all": every device the backend finds; otherwise a comma-separated list of distinct indices.
// On the host backend there is one CPU device and the indices name logical workers on it (so
// that CI can run several workers); on GPU backends each index must exist. Error naming the cause.
std::vector<int> parse_device_list(const std::string& text, gpu::BackendKind backend);

}  // namespace tiletune::tuner
