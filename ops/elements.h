// Reading and writing one element of an input or output buffer in any data type, and the random
// inputs every problem kind validates on, shared by the GEMM and convolution problem data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "gpu/backend.h"
#include "solutions/gemm_problem.h"

namespace tiletune::ops {

double load_element(const std::uint8_t* base, std::int64_t index, DataType t);
// Integer types take v rounded to the nearest integer (the caller keeps it in range).
void store_element(std::uint8_t* base, std::int64_t index, DataType t, float v);

// Uniform in [-1, 1], never zero: a kernel that skips a term cannot hide behind a zero input.
inline float random_input(std::mt19937_64& rng) {
  float v = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
  return v == 0.f ? 0.5f : v;
}

// random_input's value as an element of type t: integer types get [-127, 127] (never zero), so
// that int8 products are not all -1, 0 and 1; floating-point types keep it as it is.
inline float random_element(float v, DataType t) {
  if (!is_integer(t)) return v;
  const float i = std::nearbyint(v * 127.f);
  return i == 0.f ? (v < 0 ? -1.f : 1.f) : i;
}

// Runs work(t) for every t in [0, threads): t = 0 on this thread, the others on threads of their
// own (a share whose thread cannot be started runs here instead); returns once all are done, also
// when one throws (its exception then propagates).
template <class Work>
void run_on_threads(unsigned threads, Work&& work) {
  std::vector<std::thread> pool;
  unsigned t = 1;
  for (; t < threads; ++t) {
    try {
      pool.emplace_back(work, t);
    } catch (const std::system_error&) {
      break;
    }
  }
  struct Join {
    std::vector<std::thread>& pool;
    ~Join() {
      for (auto& th : pool) th.join();
    }
  } join{pool};
  work(0u);
  for (; t < threads; ++t) work(t);
}

// Calls put(i, v) with v = random_input(...) for every i in [0, n), on all cores: chunks of
// 2^16 indices, each with a generator seeded from `seed` and the chunk's number, so the values
// depend on the seed alone (not on the thread count). A 4096^2 x 3 operand set took about a
// second on one core, paid by every worker for every problem before its first candidate.
template <class Put>
void random_fill(std::int64_t n, std::uint64_t seed, Put&& put) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  std::atomic<std::int64_t> next{0};
  auto work = [&](unsigned) {
    for (std::int64_t c; (c = next++) < chunks;) {
      std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * std::uint64_t(c + 1)));
      for (std::int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end; ++i) put(i, random_input(rng));
    }
  };
  run_on_threads(unsigned(std::min<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()), chunks)), work);
}

// How many copies of a problem's operands (set_bytes each) rotate through timing so that runs
// do not find their inputs in the device's last-level cache: 1 without `rotate`.
std::size_t rotation_sets(const gpu::DeviceInfo& dev, std::size_t set_bytes, bool rotate);

}  // namespace tiletune::ops
