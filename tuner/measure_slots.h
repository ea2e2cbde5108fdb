// The measuring side of a sweep: one slot per device, each measuring in this process or in a
// worker process of its own (tuner/worker.h), fed from one shared list so that a fast device
// simply takes more candidates than a slow one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tuner/worker.h"

namespace tiletune::tuner {

struct MeasureSlot {
  int device = 0;              // as the user named it (on the host backend: a logical worker)
  std::int64_t device_id = 0;  // its row in the database's devices table
  std::unique_ptr<Measurer> local;
  std::unique_ptr<WorkerProcess> worker;
  std::size_t measured = 0;    // measurements recorded from this slot, for the summary

  MeasureResult measure(const MeasureRequest& r, double timeout_s) {
    return local ? local->measure(r) : worker->measure(r, timeout_s);
  }
  int worker_starts() const { return worker ? worker->starts() : 0; }
};

// Runs tasks 0..count-1 over the slots: each slot takes the lowest task not yet taken as soon as
// it is free. With one slot all of it runs on the calling thread (an in-process device stays on
// the thread that opened it). `may_start(i)` is asked, one call at a time, before task i is
// handed out; false skips it. The first exception of any slot stops the handing out, and is
// rethrown once every slot has finished its current task.
void run_on_slots(std::vector<MeasureSlot>& slots, std::size_t count, const std::function<bool(std::size_t)>& may_start,
                  const std::function<void(MeasureSlot&, std::size_t)>& run);

}  // namespace tiletune::tuner
