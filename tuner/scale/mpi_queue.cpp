#include "tuner/scale/mpi_queue.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace tiletune::tuner::scale {

namespace {

enum Tag : int { kRequest = 1, kAssign = 2, kFileSize = 3, kFileChunk = 4 };
constexpr int kNoMore = -1;
// MPI counts are ints: files go in pieces well under 2 GiB.
constexpr std::int64_t kChunk = std::int64_t(1) << 28;

// The shards not yet handed out, and the codes reported so far.
class Queue {
 public:
  explicit Queue(int shards) : shards_(shards) {}
  int next() {
    std::lock_guard lock(m_);
    return next_ < shards_ ? next_++ : kNoMore;
  }
  void report(int code) {
    std::lock_guard lock(m_);
    if (code != 0 && code_ == 0) code_ = code;
  }
  int code() {
    std::lock_guard lock(m_);
    return code_;
  }

 private:
  std::mutex m_;
  int shards_, next_ = 0, code_ = 0;
};

int run_one(const std::function<int(int, const MpiRank&)>& work, int shard, const MpiRank& me) {
  const int rank = me.rank;
  try {
    return work(shard, me);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiletune: rank %d, shard %d: %s\n", rank, shard, e.what());
  } catch (...) {
    std::fprintf(stderr, "tiletune: rank %d, shard %d: unknown exception\n", rank, shard);
  }
  return 2;
}

// Rank 0's side of the queue for the other ranks: each request carries the code of the shard its
// sender finished (0 for its first request); the answer is the next shard or kNoMore.
void dispatch(Queue& queue, int others) {
  int finished = 0;
  while (finished < others) {
    int code = 0;
    MPI_Status st;
    MPI_Recv(&code, 1, MPI_INT, MPI_ANY_SOURCE, kRequest, MPI_COMM_WORLD, &st);
    queue.report(code);
    int shard = queue.next();
    MPI_Send(&shard, 1, MPI_INT, st.MPI_SOURCE, kAssign, MPI_COMM_WORLD);
    if (shard == kNoMore) ++finished;
  }
}

void send_file(const std::string& path) {
  std::ifstream in;
  std::int64_t size = -1;
  if (!path.empty()) in.open(path, std::ios::binary);
  if (in) size = std::int64_t(std::filesystem::file_size(path));
  else if (!path.empty()) std::fprintf(stderr, "tiletune: cannot read %s to send it to rank 0\n", path.c_str());
  MPI_Send(&size, 1, MPI_INT64_T, 0, kFileSize, MPI_COMM_WORLD);
  std::vector<char> buf(std::size_t(std::min(std::max<std::int64_t>(size, 0), kChunk)));
  for (std::int64_t left = size; left > 0;) {
    const std::int64_t n = std::min(left, kChunk);
    in.read(buf.data(), n);
    MPI_Send(buf.data(), int(n), MPI_BYTE, 0, kFileChunk, MPI_COMM_WORLD);
    left -= n;
  }
}

// Rank 0: the file of rank `from`, written to `path`; false when that rank had none to send.
bool receive_file(int from, const std::string& path) {
  std::int64_t size = 0;
  MPI_Recv(&size, 1, MPI_INT64_T, from, kFileSize, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (size < 0) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::vector<char> buf(std::size_t(std::min(size, kChunk)));
  for (std::int64_t left = size; left > 0;) {
    const std::int64_t n = std::min(left, kChunk);
    MPI_Recv(buf.data(), int(n), MPI_BYTE, from, kFileChunk, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    out.write(buf.data(), n);
    left -= n;
  }
  return bool(out);
}

}  // namespace

MpiQueueResult run_mpi_queue(const std::function<int(int)>& shards, const std::function<int(int, const MpiRank&)>& work,
                             const std::function<std::string(const MpiRank&)>& local_db, const std::string& gather_dir) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MpiQueueResult r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  const MpiRank me{r.rank, r.size};
  if (r.rank == 0) {
    Queue queue(shards(r.size));
    // Without MPI_THREAD_MULTIPLE rank 0 may not call MPI from two threads: it only dispatches.
    const bool works_too = r.size == 1 || provided == MPI_THREAD_MULTIPLE;
    if (!works_too)
      std::fprintf(stderr, "tiletune: this MPI library lacks MPI_THREAD_MULTIPLE: rank 0 hands out shards only\n");
    std::thread dispatcher;
    if (r.size > 1) dispatcher = std::thread([&] { dispatch(queue, r.size - 1); });
    if (works_too)
      for (int s; (s = queue.next()) != kNoMore;) {
        queue.report(run_one(work, s, me));
        r.shards_done.push_back(s);
      }
    if (dispatcher.joinable()) dispatcher.join();
    r.exit_code = queue.code();
    if (!r.shards_done.empty()) r.databases.push_back(local_db(me));
    std::filesystem::create_directories(gather_dir);
    for (int from = 1; from < r.size; ++from) {
      const std::string path = (std::filesystem::path(gather_dir) / ("rank" + std::to_string(from) + ".db")).string();
      if (receive_file(from, path)) r.databases.push_back(path);
    }
  } else {
    int code = 0;
    for (;;) {
      int shard = kNoMore;
      MPI_Send(&code, 1, MPI_INT, 0, kRequest, MPI_COMM_WORLD);
      MPI_Recv(&shard, 1, MPI_INT, 0, kAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (shard == kNoMore) break;
      code = run_one(work, shard, me);
      if (code != 0 && r.exit_code == 0) r.exit_code = code;
      r.shards_done.push_back(shard);
    }
    send_file(r.shards_done.empty() ? std::string() : local_db(me));
  }
  MPI_Finalize();
  return r;
}

}  // namespace tiletune::tuner::scale
