#include "tuner/measure_slots.h"

#include <exception>
#include <mutex>
#include <thread>

namespace tiletune::tuner {

void run_on_slots(std::vector<MeasureSlot>& slots, std::size_t count, const std::function<bool(std::size_t)>& may_start,
                  const std::function<void(MeasureSlot&, std::size_t)>& run) {
  std::mutex mu;
  std::size_t next = 0;
  std::exception_ptr failure;
  // The next task this slot may run, or `count` when there is none left.
  auto take = [&]() -> std::size_t {
    std::lock_guard<std::mutex> lock(mu);
    while (!failure && next < count) {
      std::size_t i = next++;
      if (may_start(i)) return i;
    }
    return count;
  };
  auto loop = [&](MeasureSlot& slot) {
    try {
      for (std::size_t i; (i = take()) < count;) run(slot, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
    }
  };
  if (slots.size() == 1) {
    loop(slots[0]);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t s = 1; s < slots.size(); ++s) threads.emplace_back(loop, std::ref(slots[s]));
    loop(slots[0]);
    for (auto& t : threads) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tiletune::tuner
