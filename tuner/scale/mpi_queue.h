// tune --mpi: shards handed out by rank 0 as a work queue, so that a slow node takes fewer of
// them instead of holding the sweep; each rank tunes into its own database on local storage and
// at the end sends that file to rank 0, which merges them (tools/cmd_tune.cpp). The MPI calls are
// all in mpi_queue.cpp, built only with TILETUNE_MPI (CMakeLists.txt); nothing else includes mpi.h.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace tiletune::tuner::scale {

struct MpiRank {
  int rank = 0, size = 1;
};

struct MpiQueueResult {
  int rank = 0, size = 1;
  std::vector<int> shards_done;  // by this rank, in the order it ran them
  // Rank 0: every rank's database file (its own first, as given), the others' copied under
  // gather_dir. Empty on the other ranks.
  std::vector<std::string> databases;
  int exit_code = 0;  // the first non-zero code of this rank's shards (rank 0: of every rank's)
};

// Joins the MPI job (MPI_Init_thread ... MPI_Finalize inside). Runs `work(shard)` for each shard
// 0..shards(size)-1 exactly once across the ranks, each on whichever rank asks next (rank 0 too, from a
// dispatching thread when the library gives MPI_THREAD_MULTIPLE, else rank 0 only dispatches);
// `work` returns an exit code. Then every rank's `local_db(rank)` is sent to rank 0.
// `work` and `local_db` must not throw across ranks: an exception becomes that shard's code 2.
MpiQueueResult run_mpi_queue(const std::function<int(int size)>& shards,
                             const std::function<int(int shard, const MpiRank&)>& work,
                             const std::function<std::string(const MpiRank&)>& local_db, const std::string& gather_dir);

}  // namespace tiletune::tuner::scale
