// The measuring side of a sweep: one slot per device, each measuring in this process or in a
// worker process of its own (tuner/worker.h), fed from one shared list so that a fast device
// simply takes more candidates than a slow one.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tuner/worker.h"

namespace tiletune::tuner {

struct MeasureSlot {
  int device = 0;              // as the user named it (on the host backend: a logical worker)
  std::int64_t device_id = 0;  // its row in the database's devices table
  std::unique_ptr<Measurer> local;
  std::unique_ptr<WorkerProcess> worker;
  std::size_t measured = 0;    // measurements recorded from this slot, for the summary

  MeasureResult measure(const MeasureRequest& r, double timeout_s, double prepare_timeout_s) {
    return local ? local->measure(r) : worker->measure(r, timeout_s, prepare_timeout_s);
  }
  int worker_starts() const { return worker ? worker->starts() : 0; }
};

// Starts every slot's worker process at once and leaves out the slots whose worker does not start
// (a device that cannot be opened, a broken driver): the sweep goes on with the others. Returns one
// line per slot left out ("device N: why"); throws, naming every device's reason, when none starts.
std::vector<std::string> start_workers(std::vector<MeasureSlot>& slots);

// Runs batches of tasks over the slots, each slot taking its next task as soon as it is free.
// Without groups that is the lowest task not yet taken. With groups (a sweep's problems) a slot
// stays on its group while it has tasks left, then takes the first group nobody is on (the order
// the sweep compiles in), else helps the group with the most left (but not for its last task
// alone): each worker prepares the data of as few problems (operands, fp64 reference) as it can,
// and the last groups are shared. With `ready` (is task i's code object compiled?) and room for
// more than one group per slot, a slot first takes a ready task of one of its groups, then a
// ready first task of a group nobody is on (up to `groups_per_slot` groups, whose data its worker
// keeps), and only then waits on its first group: while the compiler is behind, one code object
// feeds a slot one task per group it holds instead of one. Slot 0 works on the calling thread (an in-process device stays
// on the thread that opened it); every other slot on a thread of its own that lives as long as
// the runner, because a worker process is started with PR_SET_PDEATHSIG and would be killed with
// the thread that started it if that thread ended after a batch.
class SlotRunner {
 public:
  explicit SlotRunner(std::vector<MeasureSlot>& slots);
  ~SlotRunner();
  SlotRunner(const SlotRunner&) = delete;
  SlotRunner& operator=(const SlotRunner&) = delete;

  // Tasks 0..count-1. `may_start(i)` is asked, one call at a time, before task i is handed out;
  // false skips it. The first exception of any slot stops the handing out, and is rethrown once
  // every slot has finished its current task.
  // `group_of(i)` names task i's group (none: one group).
  void run(std::size_t count, const std::function<bool(std::size_t)>& may_start,
           const std::function<void(MeasureSlot&, std::size_t)>& task,
           const std::function<std::size_t(std::size_t)>& group_of = nullptr,
           const std::function<bool(std::size_t)>& ready = nullptr, std::size_t groups_per_slot = 1);

 private:
  void serve(std::size_t slot);  // a slot's thread: one batch after another
  void work(std::size_t slot);   // takes tasks of the current batch until none is left
  bool next_task(std::size_t slot, std::size_t& task);  // under mu_: the slot's next task, if any
  void stop();                   // ends the slot threads (between batches)

  std::vector<MeasureSlot>& slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t batch_ = 0;  // batches started so far
  std::size_t busy_ = 0;   // slot threads still on the current batch
  bool quit_ = false;
  std::size_t count_ = 0;
  struct Group {
    std::vector<std::size_t> tasks;  // in task order
    std::size_t next = 0;            // tasks before it are taken
    std::size_t slots = 0;           // slots working on it
  };
  std::vector<Group> groups_;
  std::vector<std::vector<std::size_t>> slot_groups_;  // per slot: the groups it is on, first first
  std::size_t groups_per_slot_ = 1;
  const std::function<bool(std::size_t)>* ready_ = nullptr;
  const std::function<bool(std::size_t)>* may_start_ = nullptr;
  const std::function<void(MeasureSlot&, std::size_t)>* task_ = nullptr;
  std::exception_ptr failure_;
  std::vector<std::thread> threads_;
};

}  // namespace tiletune::tuner
