// Device scratch per stream, for a bounded number of streams. Kernels on one stream run in order and
// may share a buffer; kernels on two streams may overlap and must not. A program that issues work on
// ever new streams would otherwise grow one buffer per stream it ever used: past `max_streams`, the
// stream used longest ago gives its buffer up, after the device has finished all work queued so far
// (a destroyed stream cannot be told from an idle one). Not thread-safe: the owner's lock guards it,
// and must also guard the enqueueing of the work that uses a buffer, so that no other stream takes
// it over in between.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::gpu {

class StreamBuffers {
 public:
  // Past this many streams a buffer is taken over, which waits for the device: a bound well above
  // the streams a trainer keeps (its compute, copy and communication streams).
  static constexpr std::size_t kDefaultStreams = 32;
  explicit StreamBuffers(std::size_t max_streams = kDefaultStreams) : max_(std::max<std::size_t>(1, max_streams)) {
    entries_.reserve(max_);  // a returned reference stays valid until the next get
  }

  // A buffer of at least `bytes` for `stream`. `fresh` (if given) is set when the buffer is new to
  // the stream (newly allocated or taken over), so that a caller that needs it zeroed zeroes it.
  DeviceBuffer& get(Device& dev, Stream stream, std::size_t bytes, bool* fresh = nullptr) {
    if (fresh) *fresh = false;
    Entry* e = nullptr;
    for (Entry& x : entries_)
      if (x.stream == stream) e = &x;
    if (!e && entries_.size() >= max_) {
      e = &*std::min_element(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
      dev.synchronize();  // its old stream's kernels may still read it
      e->stream = stream;
      if (fresh) *fresh = true;
      ++evictions_;
    }
    if (!e) {
      entries_.push_back(Entry{stream, DeviceBuffer(), 0});
      e = &entries_.back();
    }
    if (e->buffer.size() < bytes) {
      if (e->buffer.get()) dev.synchronize();  // the stream's queued kernels may still use the old one
      e->buffer = DeviceBuffer();                // freed before the larger one is taken
      e->buffer = DeviceBuffer(dev, bytes);
      if (fresh) *fresh = true;
    }
    e->used = ++clock_;
    return e->buffer;
  }

  std::size_t streams() const { return entries_.size(); }
  std::uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    Stream stream;
    DeviceBuffer buffer;
    std::uint64_t used;
  };
  std::vector<Entry> entries_;
  std::size_t max_;
  std::uint64_t clock_ = 0, evictions_ = 0;
};

}  // namespace tiletune::gpu
