#include "gpu/host/host_backend.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/env.h"
#include "common/error.h"
#include "gpu/compile_cache.h"
#include "common/process.h"
#include "common/temp_dir.h"

namespace tiletune::gpu::host {
namespace {

namespace fs = std::filesystem;
using HostEntry = void (*)(const void* arg, unsigned bx, unsigned by, unsigned bz);
constexpr const char* kEntry = "tt_entry";

std::string host_arch() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86_64-avx2";
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "host";
#endif
}

// The flags that a code object for `arch` needs; an arch name this build does not know is refused
// so that an object is never built for, or loaded on, a CPU it was not meant for.
std::string arch_flags(const std::string& arch) {
  if (arch == "x86_64-avx2") return "-mavx2 -mfma";
  if (arch == "x86_64" || arch == "aarch64" || arch == "host") return "";
  throw Error("host backend: unknown arch '" + arch + "'");
}

// The compiler's command: TILETUNE_HOST_CXX split at white space (a launcher such as "ccache c++"
// works; there is no shell, so no quoting), else c++.
std::vector<std::string> cxx() {
  const char* env = std::getenv("TILETUNE_HOST_CXX");
  std::vector<std::string> argv;
  std::istringstream words(env && *env ? env : "c++");
  for (std::string w; words >> w;) argv.push_back(w);
  if (argv.empty()) argv.push_back("c++");
  return argv;
}

// Runs the compiler (common/process.h: run_program) with its temporary files in `tmpdir`. A
// compiler that cannot be started is the environment's failure, not the candidate's: thrown, and
// nothing is recorded for it.
std::pair<int, std::string> run_process(const std::vector<std::string>& argv, const fs::path& tmpdir) {
  try {
    ProgramOutput out = run_program(argv, tmpdir.empty() ? std::vector<std::string>{}
                                                         : std::vector<std::string>{"TMPDIR=" + tmpdir.string()});
    return {out.status, std::move(out.text)};
  } catch (const Error& e) {
    throw Error(std::string("host backend: ") + e.what() + " (the compiler; set TILETUNE_HOST_CXX)");
  }
}

void write_file(const fs::path& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) throw Error("cannot write " + path.string());
}

class HostCompiler final : public Compiler {
 public:
  // The command as well as what it says of itself: a compile that failed under one compiler (or
  // TILETUNE_HOST_CXX) is tried again under another, since the cache key and the sweep's retry
  // of recorded compile failures both go by this.
  std::string version() const override {
    static std::mutex mu;
    static std::map<std::string, std::string> seen;
    std::vector<std::string> argv = cxx();
    std::string command;
    for (const auto& w : argv) command += (command.empty() ? "" : " ") + w;
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = seen.find(command); it != seen.end()) return it->second;
    argv.push_back("--version");
    std::string first = "unknown";  // compile() says why
    try {
      auto [rc, out] = run_process(argv, {});
      if (rc == 0) first = out.substr(0, out.find('\n'));
    } catch (const Error&) {
    }
    return seen[command] = command + ": " + first;
  }

  CompileResult compile(const CompileRequest& req) const override {
    CompileResult result;
    std::string flags;
    try {
      flags = arch_flags(req.arch);
    } catch (const Error& e) {
      result.log = e.what();
      return result;
    }
    // A private directory (mkdtemp: mode 0700); failing to make or fill it, or to start the
    // compiler, is thrown: the environment's fault, never recorded against the candidate.
    const TempDir temp("tiletune-host-");
    const fs::path& dir = temp.path();
    for (const auto& [name, text] : req.headers) write_file(dir / name, text.data(), text.size());
    std::string tu = req.source + "\nextern \"C\" void " + kEntry +
                     "(const void* arg, unsigned bx, unsigned by, unsigned bz) {\n  " + req.name_expression +
                     "(arg, bx, by, bz);\n}\n";
    write_file(dir / "tu.cpp", tu.data(), tu.size());
    std::vector<std::string> argv = cxx();
    for (const char* f : {"-O3", "-std=c++17", "-fPIC", "-shared", "-fno-exceptions"}) argv.push_back(f);
    std::istringstream arch_words(flags);
    for (std::string w; arch_words >> w;) argv.push_back(w);
    argv.insert(argv.end(), req.options.begin(), req.options.end());
    argv.insert(argv.end(), {"-I" + dir.string(), "-o", (dir / "k.so").string(), (dir / "tu.cpp").string()});
    auto [rc, out] = run_process(argv, dir);
    result.log = out;
    if (rc == 0) {
      std::ifstream f(dir / "k.so", std::ios::binary);
      result.code.bytes.assign(std::istreambuf_iterator<char>(f), {});
      result.code.symbol = kEntry;
      result.ok = !result.code.bytes.empty();
    } else if (result.log.empty()) {
      result.log = "compiler exited with status " + std::to_string(rc);
    }
    return result;
  }
};

class HostKernel final : public Kernel {
 public:
  HostKernel(void* handle, HostEntry fn) : handle_(handle), fn_(fn) {}
  ~HostKernel() override { ::dlclose(handle_); }
  HostEntry fn() const { return fn_; }

 private:
  void* handle_;
  HostEntry fn_;
};

// A code object is written for dlopen into a private directory made for that one load (mkdtemp:
// mode 0700, so no other user can swap the file between the write and the dlopen), under a name
// this process never used before (dlopen hands back a library it has loaded already under the
// same name); file and directory are removed as soon as it is loaded.
std::string unique_object_name() {
  static std::atomic<std::uint64_t> count{0};
  return "k" + std::to_string(++count) + ".so";
}

// Runs every block of a grid once, spread over a fixed set of threads; the caller works too.
class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads) {
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // One grid at a time, like one stream: launches from several threads queue here.
  void run(HostEntry fn, const void* arg, const unsigned grid[3]) {
    std::lock_guard<std::mutex> one_grid(launch_mu_);
    std::unique_lock<std::mutex> lock(mu_);
    fn_ = fn;
    arg_ = arg;
    gx_ = grid[0];
    gy_ = grid[1];
    total_ = std::uint64_t(grid[0]) * grid[1] * grid[2];
    next_ = 0;
    busy_ = workers_.size();
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    work();
    lock.lock();
    done_.wait(lock, [this] { return busy_ == 0; });
  }

 private:
  void work() {
    for (std::uint64_t i; (i = next_.fetch_add(1)) < total_;) {
      unsigned x = unsigned(i % gx_), y = unsigned(i / gx_ % gy_), z = unsigned(i / (std::uint64_t(gx_) * gy_));
      fn_(arg_, x, y, z);
    }
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      work();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex launch_mu_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  bool stop_ = false;
  std::uint64_t generation_ = 0;
  size_t busy_ = 0;
  HostEntry fn_ = nullptr;
  const void* arg_ = nullptr;
  unsigned gx_ = 1, gy_ = 1;
  std::uint64_t total_ = 0;
  std::atomic<std::uint64_t> next_{0};
};

unsigned thread_count() {
  return unsigned(env_integer("TILETUNE_HOST_THREADS", std::max(1u, std::thread::hardware_concurrency()), 1, 4096));
}

DeviceInfo host_info() {
  DeviceInfo info;
  info.backend = BackendKind::Host;
  info.index = 0;
  info.arch = host_arch();
  info.name = "host CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      info.name = line.substr(line.find(':') + 2);
      break;
    }
  info.multiprocessors = int(thread_count());
  info.max_threads_per_block = 1;
  info.shared_bytes_per_block = 0;
  info.warp_size = 1;
  info.driver_version = "none";
  long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  info.cache_bytes = l3 > 0 ? l3 : 32l << 20;
  return info;
}

class HostDevice final : public Device {
 public:
  HostDevice() : info_(host_info()), pool_(thread_count()) {}
  const DeviceInfo& info() const override { return info_; }
  const Compiler& compiler() const override { return *compiler_; }

  std::shared_ptr<Kernel> load(const CodeObject& code) override {
    const TempDir temp("tiletune-host-");
    const std::string path = (temp.path() / unique_object_name()).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw Error("cannot create " + path + " for a host code object: " + std::strerror(errno));
    std::size_t done = 0;
    while (done < code.bytes.size()) {
      const ssize_t n = ::write(fd, code.bytes.data() + done, code.bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += std::size_t(n);
    }
    ::close(fd);
    const bool written = done == code.bytes.size();
    void* handle = written ? ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    const std::string why = written ? (handle ? "" : ::dlerror()) : "short write";
    if (!handle) throw Error("cannot load host code object: " + why);
    auto fn = reinterpret_cast<HostEntry>(::dlsym(handle, code.symbol.c_str()));
    if (!fn) {
      ::dlclose(handle);
      throw Error("host code object has no symbol " + code.symbol);
    }
    return std::make_shared<HostKernel>(handle, fn);
  }

  void launch(Kernel& kernel, const LaunchDims& dims, const void* arg, std::size_t arg_size, Stream) override {
    std::vector<unsigned char> copy(static_cast<const unsigned char*>(arg), static_cast<const unsigned char*>(arg) + arg_size);
    pool_.run(static_cast<HostKernel&>(kernel).fn(), copy.data(), dims.grid);
  }

  void* alloc(std::size_t bytes) override {
    if (bytes > SIZE_MAX - 255) throw Error("host backend: cannot allocate " + std::to_string(bytes) + " bytes");
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) throw Error("host backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void free(void* ptr) noexcept override { std::free(ptr); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill_bytes(void* dst, std::uint8_t value, std::size_t bytes) override { std::memset(dst, value, bytes); }
  void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
               std::size_t rows, Stream) override {
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
  }
  void synchronize() override {}

  // Host launches are synchronous, so an event is just the time it was recorded.
  Event create_event() override { return new std::chrono::steady_clock::time_point(); }
  void destroy_event(Event e) noexcept override { delete static_cast<std::chrono::steady_clock::time_point*>(e); }
  void record(Event e, Stream) override { *static_cast<std::chrono::steady_clock::time_point*>(e) = std::chrono::steady_clock::now(); }
  float elapsed_ms(Event a, Event b) override {
    auto d = *static_cast<std::chrono::steady_clock::time_point*>(b) - *static_cast<std::chrono::steady_clock::time_point*>(a);
    return std::chrono::duration<float, std::milli>(d).count();
  }

 private:
  DeviceInfo info_;
  std::unique_ptr<Compiler> compiler_ = with_compile_cache(std::make_unique<HostCompiler>());
  ThreadPool pool_;
};

}  // namespace

std::unique_ptr<Compiler> make_compiler() { return std::make_unique<HostCompiler>(); }
std::vector<DeviceInfo> list_devices() { return {host_info()}; }
std::unique_ptr<Device> open_device(int index) {
  if (index != 0) throw Error("host backend has one device (index 0), not " + std::to_string(index));
  return std::make_unique<HostDevice>();
}

}  // namespace tiletune::gpu::host
