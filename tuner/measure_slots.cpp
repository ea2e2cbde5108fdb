#include "tuner/measure_slots.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "common/error.h"

namespace tiletune::tuner {

std::vector<std::string> start_workers(std::vector<MeasureSlot>& slots) {
  std::vector<std::string> why(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) try {
      slots[i].worker->launch();
    } catch (const Error& e) {
      why[i] = e.what();
    }
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (why[i].empty()) try {
        slots[i].worker->await_hello();
      } catch (const Error& e) {
        why[i] = e.what();
      }
  std::vector<std::string> left_out;
  std::vector<MeasureSlot> kept;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (why[i].empty()) kept.push_back(std::move(slots[i]));
    else left_out.push_back("device " + std::to_string(slots[i].device) + ": " + why[i]);
  }
  if (kept.empty()) {
    std::string all;
    for (const auto& l : left_out) all += (all.empty() ? "" : "; ") + l;
    throw Error("no device's worker process started: " + all);
  }
  slots = std::move(kept);
  return left_out;
}

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
                     const std::function<std::size_t(std::size_t)>& group_of,
                     const std::function<bool(std::size_t)>& ready, std::size_t groups_per_slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    count_ = count;
    groups_.clear();
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t g = group_of ? group_of(i) : 0;
      if (g >= groups_.size()) groups_.resize(g + 1);
      groups_[g].tasks.push_back(i);
    }
    slot_groups_.assign(slots_.size(), {});
    groups_per_slot_ = std::max<std::size_t>(1, groups_per_slot);
    ready_ = ready ? &ready : nullptr;
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
  ready_ = nullptr;
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
  std::vector<std::size_t>& mine = slot_groups_[slot];
  auto left = [&](std::size_t g) { return groups_[g].tasks.size() - groups_[g].next; };
  auto take = [&](std::size_t g) {
    task = groups_[g].tasks[groups_[g].next++];
    return true;
  };
  auto join = [&](std::size_t g) {
    ++groups_[g].slots;
    mine.push_back(g);
  };
  for (std::size_t k = 0; k < mine.size();) {  // groups it finished are left to others
    if (left(mine[k]) == 0) {
      --groups_[mine[k]].slots;
      mine.erase(mine.begin() + std::ptrdiff_t(k));
    } else {
      ++k;
    }
  }
  if (ready_) {
    // While the compiler is behind: a ready task of its groups, else the ready first task of a
    // group nobody is on, while it has room for one more group.
    for (std::size_t g : mine)
      if ((*ready_)(groups_[g].tasks[groups_[g].next])) return take(g);
    if (groups_per_slot_ > 1 && mine.size() < groups_per_slot_)
      for (std::size_t g = 0; g < groups_.size(); ++g)
        if (groups_[g].slots == 0 && left(g) && (*ready_)(groups_[g].tasks[groups_[g].next])) {
          join(g);
          return take(g);
        }
  }
  if (!mine.empty()) return take(mine.front());
  // Move on: the first group nobody is on (the order the sweep compiles in), else help the one
  // with the most left; not for its last task alone (a sweep's vendor comparison, best run where
  // the data is, and one task does not pay for preparing the problem's data again).
  std::size_t best = groups_.size();
  for (std::size_t g = 0; g < groups_.size() && best == groups_.size(); ++g)
    if (groups_[g].slots == 0 && left(g)) best = g;
  if (best == groups_.size()) {
    std::size_t most = groups_.size() == 1 ? 1 : 2;  // at least this many left
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if (left(g) >= most) best = g, most = left(g) + 1;
  }
  if (best == groups_.size()) return false;
  join(best);
  return take(best);
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
