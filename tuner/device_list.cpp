#include "tuner/device_list.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace tiletune::tuner {

std::vector<int> parse_device_list(const std::string& text, gpu::BackendKind backend) {
  const bool host = gpu::traits(backend).host_memory;  // logical workers on the one CPU
  const std::vector<gpu::DeviceInfo> found = gpu::list_devices(backend);
  if (found.empty()) throw Error(std::string("--devices: the ") + gpu::to_string(backend) + " backend finds no device");
  std::vector<int> out;
  if (text == "all") {
    for (const auto& d : found) out.push_back(d.index);
    return out;
  }
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    std::size_t used = 0;
    int index = -1;
    try {
      index = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || index < 0)
      throw Error("--devices: '" + part + "' is not a device index (expected all, or indices such as 0,1)");
    if (std::find(out.begin(), out.end(), index) != out.end())
      throw Error("--devices: device " + part + " is named twice");
    if (!host && std::none_of(found.begin(), found.end(), [&](const gpu::DeviceInfo& d) { return d.index == index; }))
      throw Error(std::string("--devices: ") + gpu::to_string(backend) + " device " + part + " does not exist (" +
                  std::to_string(found.size()) + " found; `tiletune devices` lists them)");
    out.push_back(index);
  }
  if (out.empty()) throw Error("--devices: no device named (expected all, or indices such as 0,1)");
  return out;
}

}  // namespace tiletune::tuner
