// Small numeric helpers the example trainers share: bf16 rounding, a portable normal
// distribution and seed mixing (so that batches depend only on (seed, step) on every platform).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

namespace tiletune::examples {

// fp32 -> bf16, round to nearest even (NaN kept a NaN).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

// A portable standard normal (std::normal_distribution differs between standard libraries).
struct Normal {
  explicit Normal(std::uint64_t seed) : rng(seed) {}
  float operator()() {
    if (has_spare) {
      has_spare = false;
      return spare;
    }
    double u1, u2;
    do u1 = double(rng() >> 11) * 0x1.0p-53;
    while (u1 <= 0);
    u2 = double(rng() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1)), t = 6.283185307179586 * u2;
    spare = float(r * std::sin(t));
    has_spare = true;
    return float(r * std::cos(t));
  }
  std::mt19937_64 rng;
  bool has_spare = false;
  float spare = 0;
};

inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {  // splitmix64 of a combined seed
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// bf16 -> fp32 (exact).
inline float from_bf16(std::uint16_t h) {
  const std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace tiletune::examples
