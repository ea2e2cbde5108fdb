// The backend seam. Every vendor implements three small interfaces:
//   Compiler - source -> code object (no device needed: CI compiles CUDA and HIP kernels)
//   Kernel   - one loaded function of a code object
//   Device   - properties, load, launch, memory, events
// Everything above this header (tuner, runtime) is vendor-neutral.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend_traits.h"

namespace tiletune::gpu {

enum class BackendKind { Host, Cuda, Hip };

const char* to_string(BackendKind kind);
BackendKind backend_from_string(const std::string& name);  // throws Error naming the input

struct DeviceInfo {
  BackendKind backend = BackendKind::Host;
  int index = 0;
  std::string name;            // "NVIDIA H200", "host x86_64"
  std::string arch;            // "sm_90a", "gfx90a", "x86_64-avx2"
  int multiprocessors = 1;     // SMs, CUs, or CPU threads on the host
  int max_threads_per_block = 1024;
  int shared_bytes_per_block = 48 * 1024;  // static limit a kernel may use without opt-in
  int shared_bytes_optin = 48 * 1024;      // dynamic limit with opt-in (227 KiB on Hopper)
  int compute_capability = 0;              // major * 10 + minor on CUDA, 0 elsewhere
  int warp_size = 32;
  std::string driver_version;
  std::int64_t cache_bytes = 0;  // last-level cache: benchmarks rotate buffers past twice this
  // AMD: K of the arch's 32x32 MFMA instruction for 16-bit inputs, from the arch table (8 on CDNA2
  // and CDNA3, 16 on gfx950; 0: no MFMA, or an arch the table lacks). Templates prune instruction
  // shapes the arch lacks with it (DEV_MFMA_K16), not by failing compiles.
  int mfma_k16 = 0;
  // The same for fp8 (e4m3) and int8 inputs (DEV_MFMA_K_FP8, DEV_MFMA_K_INT8): 16 on gfx942, 64 / 32
  // on gfx950; int8 8 on gfx90a; 0 where the arch has no such MFMA.
  int mfma_k_fp8 = 0;
  int mfma_k_int8 = 0;
};

struct CompileRequest {
  std::string source;                          // the translation unit
  std::map<std::string, std::string> headers;  // name -> text, resolvable by #include "name"
  std::string name_expression;                 // e.g. "simt_gemm<float, float, false, ...>"
  std::vector<std::string> options;            // extra compiler options
  std::string arch;                            // target arch, as DeviceInfo::arch
};

struct CodeObject {
  std::vector<std::uint8_t> bytes;
  std::string symbol;  // lowered (mangled) name of the instantiated kernel
};

struct CompileResult {
  bool ok = false;
  std::string log;  // compiler output; the reason when !ok
  CodeObject code;
  double cpu_s = -1;  // CPU seconds the compile took in another process (a compile server); -1: not known
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // Identifies the compiler for cache keys: a new compiler version never reuses old objects.
  virtual std::string version() const = 0;
  // Thread-safe: the compile pool calls it from many threads at once.
  virtual CompileResult compile(const CompileRequest& request) const = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
};

struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  unsigned cluster[3] = {1, 1, 1};  // thread-block cluster (CUDA sm_90+); 1x1x1 = none
  // A persistent kernel (it strides over its work by gridDim.x): with clusters, grid[0] is an upper
  // bound that the backend lowers to the clusters that can be co-resident (CUDA:
  // cuOccupancyMaxActiveClusters), so that no cluster waits for another to finish.
  bool persistent = false;
};

using Stream = void*;  // native stream handle; nullptr is the default stream
using Event = void*;

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual const Compiler& compiler() const = 0;

  virtual std::shared_ptr<Kernel> load(const CodeObject& code) = 0;
  // `arg` is the kernel's single by-value argument (a params struct) of `arg_size` bytes.
  virtual void launch(Kernel& kernel, const LaunchDims& dims, const void* arg, std::size_t arg_size,
                      Stream stream = nullptr) = 0;

  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* ptr) noexcept = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill_bytes(void* dst, std::uint8_t value, std::size_t bytes) = 0;
  // Device to device, enqueued on `stream`: `rows` runs of `width` bytes, `src_pitch` bytes apart
  // in src and `dst_pitch` apart in dst (operand repacking, solutions/gemm_problem.h).
  virtual void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
                       std::size_t rows, Stream stream = nullptr) = 0;
  virtual void synchronize() = 0;

  virtual Event create_event() = 0;
  virtual void destroy_event(Event event) noexcept = 0;
  virtual void record(Event event, Stream stream = nullptr) = 0;
  virtual float elapsed_ms(Event start, Event stop) = 0;  // waits for `stop`

  // Keeps the default stream busy for about `ms` milliseconds from when it starts there, so that
  // work the host enqueues meanwhile runs back to back: timed runs of kernels shorter than their
  // host-side launch cost would otherwise include the gaps between launches. Returns false (and
  // does nothing) where the backend has no such kernel (host; HIP for now) or it cannot be loaded.
  virtual bool hold(double /*ms*/) { return false; }
  // Whether everything before `event` on its stream has finished, without waiting. Backends
  // without events to ask answer false.
  virtual bool done(Event /*event*/) { return false; }
};

// Factories: one per vendor, each in its own folder. A backend that was not built, or finds no
// driver at run time, reports zero devices instead of failing.
bool backend_built(BackendKind kind);
// "auto": CUDA if a CUDA device is present, else HIP if a HIP device is, else the host. A named
// backend that this binary lacks is an Error.
BackendKind resolve_backend(const std::string& name);
std::unique_ptr<Compiler> make_compiler(BackendKind kind);
std::vector<DeviceInfo> list_devices(BackendKind kind);
std::unique_ptr<Device> open_device(BackendKind kind, int index);
// What a code object says of itself without a device (registers, LDS, spills, matrix
// instructions), as a JSON object's text; "" where the backend has no reader for it. Throws Error
// when the reader's tools are missing or fail.
std::string code_object_figures(BackendKind kind, const CodeObject& code, const std::string& arch);

// RAII device buffer, so that a throwing validation or benchmark never leaks device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& dev, std::size_t bytes) : dev_(&dev), ptr_(dev.alloc(bytes)), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    reset();
    dev_ = o.dev_; ptr_ = o.ptr_; bytes_ = o.bytes_;
    o.ptr_ = nullptr; o.bytes_ = 0;
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() noexcept {
    if (ptr_) dev_->free(ptr_);
    ptr_ = nullptr;
  }
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }

 private:
  Device* dev_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tiletune::gpu
