// Reading and writing one element of an input or output buffer in any data type, and the random
// inputs every problem kind validates on, shared by the GEMM and convolution problem data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>

#include "gpu/backend.h"
#include "solutions/problem.h"

namespace tiletune::tuner {

double load_element(const std::uint8_t* base, std::int64_t index, DataType t);
void store_element(std::uint8_t* base, std::int64_t index, DataType t, float v);

// Uniform in [-1, 1], never zero: a kernel that skips a term cannot hide behind a zero input.
inline float random_input(std::mt19937_64& rng) {
  float v = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
  return v == 0.f ? 0.5f : v;
}

// How many copies of a problem's operands (set_bytes each) rotate through timing so that runs
// do not find their inputs in the device's last-level cache: 1 without `rotate`.
std::size_t rotation_sets(const gpu::DeviceInfo& dev, std::size_t set_bytes, bool rotate);

}  // namespace tiletune::tuner
