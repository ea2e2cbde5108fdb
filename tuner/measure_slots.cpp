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
                     const std::function<void(MeasureSlot&, std::size_t)>& task,
                     const std::function<std::size_t(std::size_t)>& group_of) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    count_ = count;
    groups_.clear();
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t g = group_of ? group_of(i) : 0;
      if (g >= groups_.size()) groups_.resize(g + 1);
      groups_[g].tasks.push_back(i);
    }
    slot_group_.assign(slots_.size(), groups_.size());
    may_start_ = &may_start;
    task_ = &task;
    failure_ = nullptr;
    busy_ = threads_.size();
    ++batch_;
  }
  cv_.notify_all();
  work(0);
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
    work(slot);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    cv_.notify_all();
  }
}

bool SlotRunner::next_task(std::size_t slot, std::size_t& task) {
  std::size_t g = slot_group_[slot];
  if (g == groups_.size() || groups_[g].next == groups_[g].tasks.size()) {
    // Move on: the first group nobody is on (the order the sweep compiles in), else help the one
    // with the most left; not for its last task alone (a sweep's vendor comparison, best run
    // where the data is, and one task does not pay for preparing the problem's data again).
    std::size_t best = groups_.size();
    for (std::size_t i = 0; i < groups_.size() && best == groups_.size(); ++i)
      if (groups_[i].slots == 0 && groups_[i].next < groups_[i].tasks.size()) best = i;
    if (best == groups_.size()) {
      std::size_t most = groups_.size() == 1 ? 1 : 2;  // at least this many left
      for (std::size_t i = 0; i < groups_.size(); ++i) {
        const std::size_t left = groups_[i].tasks.size() - groups_[i].next;
        if (left >= most) best = i, most = left + 1;
      }
    }
    if (best == groups_.size()) return false;
    if (g < groups_.size()) --groups_[g].slots;
    ++groups_[best].slots;
    slot_group_[slot] = g = best;
  }
  task = groups_[g].tasks[groups_[g].next++];
  return true;
}

void SlotRunner::work(std::size_t slot) {
  for (;;) {
    std::size_t i = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (;;) {
        if (failure_ || !next_task(slot, i)) return;
        if ((*may_start_)(i)) break;
      }
    }
    try {
      (*task_)(slots_[slot], i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_) failure_ = std::current_exception();
      return;
    }
  }
}

}  // namespace tiletune::tuner
