// One sweep in progress (run_sweep in tuner/sweep.h makes one): its device and database, the
// candidates each problem's strategy selected, the compile pool and the measuring slots. What a
// strategy (tuner/strategy.h) lays out, it runs through the methods below; everything else -
// recording, finals, the vendor's algorithms, promotions, budgets - is written once here.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/database.h"
#include "tuner/compile_pool.h"
#include "tuner/compile_process.h"
#include "tuner/enumerator.h"
#include "tuner/measure_slots.h"
#include "tuner/progress.h"
#include "tuner/search.h"
#include "tuner/strategy.h"
#include "tuner/sweep.h"

namespace tiletune::tuner {

// How a measurement is recorded: the candidate's first (a short one in halving's round one), or
// a later full timing that replaces its row (halving's round two, finals, promotions).
enum class RecordAs { First, Short, Again, Final, Promote };

class Sweep {
 public:
  // Opens the device and the database, enumerates, selects, orders the compile jobs and starts the
  // compiler and the workers.
  Sweep(const TuningConfig& config, const SweepOptions& options, std::FILE* log);
  ~Sweep();
  Sweep(const Sweep&) = delete;
  Sweep& operator=(const Sweep&) = delete;

  // The strategy's measure(), then the summary.
  SweepSummary run();

  // ---- for strategies ----------------------------------------------------------------------
  const TuningConfig& config() const { return config_; }
  std::size_t problems() const { return config_.problems.size(); }
  // Positions (in problem pi's work) of the candidates without a recorded measurement.
  std::vector<std::size_t> fresh(std::size_t pi) const;
  // What is recorded of each of problem pi's candidates.
  std::vector<HalvingRow> rows(std::size_t pi) const;
  bool unprepared(std::size_t pi);
  MeasureSlot& first_slot() { return slots_[0]; }
  // Every problem's fresh candidates in one batch over the slots (a slot stays on a problem while
  // it has tasks: its worker prepares the data of few problems), each problem's last task being
  // its finals and the vendor comparison, run where the data is while others go on.
  void measure_batch();
  // Problem pi's candidates `which` (positions in its work) over all slots, each as one frees up;
  // returns how many its seconds budget left out.
  std::size_t round(std::size_t pi, const std::vector<std::size_t>& which, const BenchmarkOptions& bench, RecordAs timing,
                    bool first_of_round);
  // The finals of problem pi on `slot`: its fastest fully timed candidates timed once more, one
  // after another, until the fastest few are all re-timed.
  void final_round(MeasureSlot& slot, std::size_t pi);
  // The problem's end: a problem whose data could not be prepared is reported, a short-timed
  // winner is fully timed, and the vendor is compared where the batch did not.
  void finish_problem(std::size_t pi);
  void count_over_budget(std::size_t n) { sum_.over_budget += n; }

 private:
  struct Work {
    const Candidate* cand;
    std::int64_t solution_id;
    std::string cache_key;
    HalvingRow row;  // what the database holds for it (halving: a resumed sweep)
  };

  void open_slots();
  void enumerate_candidates();
  void select_work();
  void order_compile_jobs(std::vector<CompileJob>& jobs, const std::vector<std::pair<std::size_t, std::size_t>>& job_at) const;
  void start(std::vector<CompileJob> jobs);
  void start_measuring();
  std::optional<db::MeasurementRecord> measure_one(MeasureSlot& slot, std::size_t pi, const Work& w,
                                                   const BenchmarkOptions& bench, RecordAs timing, bool count_step);
  MeasureResult time_work(MeasureSlot& slot, std::size_t pi, const Work& w, const BenchmarkOptions& bench,
                          std::int64_t& code_object_id);
  void record(db::MeasurementRecord& m, MeasureSlot& slot, const Work& w, RecordAs timing, bool count_step);
  db::MeasurementRecord new_record(std::size_t pi, std::int64_t solution_id, const MeasureSlot& slot) const;
  MeasureResult time_vendor(MeasureSlot& slot, std::size_t pi, const Solution& choice, int alternatives,
                            const BenchmarkOptions& bench);
  MeasureResult measure_vendor_choice(MeasureSlot& slot, std::size_t pi, const Solution& choice, int alternatives,
                                      bool final);
  void compare_vendor(MeasureSlot& slot, std::size_t pi);
  // A vendor choice, the source its timings were recorded under (MeasureResult::vendor: the
  // library, and for an algorithm other than the default its version: what the runtime checks
  // before it runs the choice), and whether it is one of the vendor's finalists.
  struct VendorChoiceRow {
    Solution choice;
    std::string source;
    bool finalist = false;
  };
  void head_to_head(MeasureSlot& slot, std::size_t pi, const std::vector<VendorChoiceRow>& vendor_choices);
  void note_vendor(std::size_t pi, const MeasureResult& res, const MeasureSlot& slot);
  bool in_budget(std::size_t pi, std::size_t& started_in_round, bool first_of_round);
  std::optional<Work> measured_again(std::size_t pi, std::int64_t sid, const Candidate* c);
  void candidate_done(std::size_t pi);
  void promote_short_winners(std::size_t pi);
  void note_uncompiled(std::size_t pi);
  SweepSummary finish();
  long long now_ns() const;

  const TuningConfig& config_;
  const SweepOptions& options_;
  std::FILE* log_;
  const Strategy& strategy_;
  const bool host_;
  std::vector<int> device_list_;
  std::unique_ptr<gpu::Device> dev_;
  BenchmarkOptions final_bench_;
  db::Database db_;
  std::string compiler_version_;
  SweepSummary sum_;
  std::vector<MeasureSlot> slots_;
  Enumeration enumeration_;
  std::vector<std::int64_t> problem_ids_;
  std::vector<std::vector<Work>> work_;
  std::vector<std::vector<std::pair<std::int64_t, const Candidate*>>> selected_;  // (solution id, candidate)

  // Below, what the compile threads and the measuring slots share: `mu_` guards the summary, the
  // database connection and the best-so-far.
  std::mutex mu_;
  std::unique_ptr<Progress> progress_;
  std::size_t compile_stage_ = 0, measure_stage_ = 0;
  std::unique_ptr<ProcessCompiler> servers_;
  std::unique_ptr<CompilePool> compile_;
  std::unique_ptr<SlotRunner> runner_;
  std::vector<double> vendor_tflops_;
  double best_tflops_ = 0;
  // A problem whose data a worker could not prepare in time: nothing of it is recorded (no
  // candidate is to blame), its remaining candidates are skipped, a rerun tries it again.
  std::vector<std::string> unprepared_;
  // Per problem: when its first candidate's code object was ready and its measuring began
  // (steady-clock nanoseconds, 0 until then): its seconds budget counts from there.
  std::unique_ptr<std::atomic<long long>[]> first_start_;
  std::vector<std::size_t> started_here_;  // candidates handed out, per problem
  std::vector<char> vendor_done_;
  std::vector<std::size_t> batch_left_;    // a problem's batch tasks not yet finished
  std::mutex batch_mu_;
  std::condition_variable batch_cv_;
  std::chrono::steady_clock::time_point measure_start_;
};

}  // namespace tiletune::tuner
