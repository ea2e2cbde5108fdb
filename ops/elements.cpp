#include "ops/elements.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernel_templates/host_types.h"

namespace tiletune::ops {

double load_element(const std::uint8_t* base, std::int64_t index, DataType t) {
  switch (t) {
    case DataType::F32: {
      float v;
      std::memcpy(&v, base + index * 4, 4);
      return v;
    }
    case DataType::F16: {
      tt_half h;
      std::memcpy(&h, base + index * 2, 2);
      return tt_host_to_float(h);
    }
    case DataType::BF16: {
      tt_bf16 h;
      std::memcpy(&h, base + index * 2, 2);
      return tt_host_to_float(h);
    }
    case DataType::E4M3: return tt_host_to_float(tt_e4m3{base[index]});
    case DataType::E5M2: return tt_host_to_float(tt_e5m2{base[index]});
    case DataType::S8: return double(static_cast<signed char>(base[index]));
    case DataType::S32: {
      std::int32_t v;
      std::memcpy(&v, base + index * 4, 4);
      return v;
    }
  }
  return 0;
}

void store_element(std::uint8_t* base, std::int64_t index, DataType t, float v) {
  switch (t) {
    case DataType::F32: std::memcpy(base + index * 4, &v, 4); break;
    case DataType::F16: {
      tt_half h = tt_host_from_float<tt_half>(v);
      std::memcpy(base + index * 2, &h, 2);
      break;
    }
    case DataType::BF16: {
      tt_bf16 h = tt_host_from_float<tt_bf16>(v);
      std::memcpy(base + index * 2, &h, 2);
      break;
    }
    case DataType::E4M3: base[index] = tt_host_from_float<tt_e4m3>(v).bits; break;
    case DataType::E5M2: base[index] = tt_host_from_float<tt_e5m2>(v).bits; break;
    case DataType::S8: base[index] = static_cast<std::uint8_t>(static_cast<signed char>(std::lrint(v))); break;
    case DataType::S32: {
      const auto i = static_cast<std::int32_t>(std::lrint(v));
      std::memcpy(base + index * 4, &i, 4);
      break;
    }
  }
}

std::size_t rotation_sets(const gpu::DeviceInfo& dev, std::size_t set_bytes, bool rotate) {
  if (!rotate || dev.cache_bytes <= 0 || set_bytes == 0) return 1;
  return std::clamp<std::size_t>((2 * std::size_t(dev.cache_bytes) + set_bytes - 1) / set_bytes, 1, 32);
}

}  // namespace tiletune::ops
