#include "tuner/measure_slots.h"

#include <utility>

namespace tiletune::tuner {

SlotRunner::SlotRunner(std::vector<MeasureSlot>& slots) : slots_(slots) {
  try {
    for (std::size_t s = 1; s < slots_.size(); ++s) threads_.emplace_back(&SlotRunner::serve, this, s);
  } catch (...) {
    stop();
    throw;
  }
}

SlotRunner::~SlotRunner() { stop(); }

void SlotRunner::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void SlotRunner::run(std::size_t count, const std::function<bool(std::size_t)>& may_start,
                     const std::function<void(MeasureSlot&, std::size_t)>& task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    count_ = count;
    next_ = 0;
    may_start_ = &may_start;
    task_ = &task;
    failure_ = nullptr;
    busy_ = threads_.size();
    ++batch_;
  }
  cv_.notify_all();
  work(slots_[0]);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return busy_ == 0; });
  may_start_ = nullptr;
  task_ = nullptr;
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void SlotRunner::serve(std::size_t slot) {
  std::size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || batch_ != seen; });
      if (quit_) return;
      seen = batch_;
    }
    work(slots_[slot]);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    cv_.notify_all();
  }
}

void SlotRunner::work(MeasureSlot& slot) {
  for (;;) {
    std::size_t i = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (;;) {
        if (failure_ || next_ >= count_) return;
        i = next_++;
        if ((*may_start_)(i)) break;
      }
    }
    try {
      (*task_)(slot, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_) failure_ = std::current_exception();
      return;
    }
  }
}

}  // namespace tiletune::tuner
