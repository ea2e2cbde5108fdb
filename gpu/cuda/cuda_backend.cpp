#include "gpu/cuda/cuda_backend.h"

#include <cuda.h>
#include <nvrtc.h>

#include <array>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "gpu/compile_cache.h"
#include "vendors/shared_library.h"

namespace tiletune::gpu::cuda {
namespace {

// The driver entry points we use, resolved once through cuGetProcAddress.
struct Driver {
#define TT_CU_FUNCS(X)                                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                 \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)   \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuMemAlloc)           \
  X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuCtxSynchronize) X(cuEventCreate)        \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventElapsedTime) X(cuEventSynchronize) X(cuEventQuery) X(cuGetErrorString)     \
  X(cuFuncSetAttribute) X(cuLaunchKernelEx) X(cuCtxGetCurrent) X(cuTensorMapEncodeTiled)    \
  X(cuTensorMapEncodeIm2col) X(cuMemcpy2DAsync)
  // Optional: without them the backend still works (see where each is used).
#define TT_CU_OPTIONAL_FUNCS(X) X(cuOccupancyMaxActiveClusters)
#define TT_DECLARE(name) decltype(&::name) name = nullptr;
  TT_CU_FUNCS(TT_DECLARE)
  TT_CU_OPTIONAL_FUNCS(TT_DECLARE)
#undef TT_DECLARE
  bool ok = false;
  std::string why;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    void* lib = open_library({"libcuda.so.1"});
    if (!lib) {
      d.why = "no CUDA driver (libcuda.so.1 not found)";
      return d;
    }
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    GetProc get_proc = nullptr;
    if (!bind_symbol(lib, get_proc, "cuGetProcAddress_v2")) {
      d.why = "CUDA driver too old (no cuGetProcAddress_v2)";
      return d;
    }
    // Ask for each entry point as of CUDA 12.0, not of the toolkit we build with: cuGetProcAddress
    // hands out the newest variant up to the version asked for, and newer variants may change the
    // signature while the header keeps the old prototype (CUDA 13's cuCtxSynchronize takes a
    // context; called as declared, it read a garbage context and failed "context is destroyed").
    constexpr int kDriverAbi = 12000;
#define TT_RESOLVE(name)                                                                      \
  if (get_proc(#name, reinterpret_cast<void**>(&d.name), kDriverAbi, CU_GET_PROC_ADDRESS_DEFAULT, \
               nullptr) != CUDA_SUCCESS || !d.name) {                                        \
    d.why = "CUDA driver lacks " #name;                                                      \
    return d;                                                                                \
  }
    TT_CU_FUNCS(TT_RESOLVE)
#undef TT_RESOLVE
#define TT_RESOLVE_OPTIONAL(name)                                                             \
  if (get_proc(#name, reinterpret_cast<void**>(&d.name), kDriverAbi, CU_GET_PROC_ADDRESS_DEFAULT, \
               nullptr) != CUDA_SUCCESS)                                                     \
    d.name = nullptr;
    TT_CU_OPTIONAL_FUNCS(TT_RESOLVE_OPTIONAL)
#undef TT_RESOLVE_OPTIONAL
    CUresult rc = d.cuInit(0);
    if (rc != CUDA_SUCCESS) {
      d.why = "cuInit failed with code " + std::to_string(int(rc));
      return d;
    }
    d.ok = true;
    return d;
  }();
  return d;
}

void check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  if (driver().cuGetErrorString) driver().cuGetErrorString(rc, &msg);
  throw Error(std::string(what) + " failed: " + (msg ? msg : "error " + std::to_string(int(rc))));
}

// NVRTC, opened with dlopen like the driver: the runtime library then loads where NVRTC is
// elsewhere than at build time (PyTorch's nvidia wheels) or absent (a vendor-only or tuned-only
// deployment never compiles); only compiling then fails, saying so. TILETUNE_NVRTC_LIB names the
// file to use instead of looking.
struct Nvrtc {
#define TT_NVRTC_FUNCS(X)                                                                                       \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) \
  X(nvrtcAddNameExpression) X(nvrtcGetLoweredName) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)           \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)
#define TT_DECLARE(name) decltype(&::name) name = nullptr;
  TT_NVRTC_FUNCS(TT_DECLARE)
#undef TT_DECLARE
  std::string why;  // empty: loaded
};

const Nvrtc& nvrtc() {
  static const Nvrtc n = [] {
    Nvrtc n;
    // The soname of the major version these declarations come from first: NVRTC's ABI is stable
    // within a major version.
    std::vector<std::string> names;
    if (const char* e = std::getenv("TILETUNE_NVRTC_LIB"); e && *e) {
      names.push_back(e);  // named: that one only
    } else {
      names.push_back("libnvrtc.so." + std::to_string(CUDA_VERSION / 1000));
      names.push_back("libnvrtc.so");
#ifdef TILETUNE_NVRTC_DIR
      names.push_back(std::string(TILETUNE_NVRTC_DIR) + "/libnvrtc.so." + std::to_string(CUDA_VERSION / 1000));
#endif
    }
    void* lib = open_library(names);
    if (!lib) {
      n.why = "NVRTC not found (tried";
      for (const auto& name : names) n.why += " " + name;
      n.why += "; set TILETUNE_NVRTC_LIB or LD_LIBRARY_PATH)";
      return n;
    }
#define TT_RESOLVE(name)                  \
  if (!bind_symbol(lib, n.name, #name)) { \
    n.why = "NVRTC lacks " #name;         \
    return n;                             \
  }
    TT_NVRTC_FUNCS(TT_RESOLVE)
#undef TT_RESOLVE
    return n;
  }();
  return n;
}

const Nvrtc& nvrtc_or_throw() {
  const Nvrtc& n = nvrtc();
  if (!n.why.empty()) throw Error(n.why);
  return n;
}

void check_nvrtc(nvrtcResult rc, const char* what) {
  if (rc != NVRTC_SUCCESS) throw Error(std::string(what) + " failed: " + nvrtc().nvrtcGetErrorString(rc));
}

class NvrtcCompiler final : public Compiler {
 public:
  std::string version() const override {
    int major = 0, minor = 0;
    if (!nvrtc().why.empty()) return "nvrtc-none";
    nvrtc().nvrtcVersion(&major, &minor);
    return "nvrtc-" + std::to_string(major) + "." + std::to_string(minor);
  }

  CompileResult compile(const CompileRequest& req) const override {
    CompileResult result;
    if (req.arch.rfind("sm_", 0) != 0) {
      result.log = "NVRTC cannot target arch '" + req.arch + "'";
      return result;
    }
    std::vector<const char*> names, texts;
    for (const auto& [name, text] : req.headers) {
      names.push_back(name.c_str());
      texts.push_back(text.c_str());
    }
    nvrtcProgram prog = nullptr;
    const Nvrtc* api = nullptr;
    try {
      api = &nvrtc_or_throw();
      const Nvrtc& nv = *api;
      check_nvrtc(nv.nvrtcCreateProgram(&prog, req.source.c_str(), "tiletune_kernel.cu", int(names.size()),
                                     texts.data(), names.data()),
                  "nvrtcCreateProgram");
      check_nvrtc(nv.nvrtcAddNameExpression(prog, req.name_expression.c_str()), "nvrtcAddNameExpression");
      std::vector<std::string> opts = {"--gpu-architecture=" + req.arch, "-std=c++17", "--device-as-default-execution-space"};
      for (const auto& o : req.options) opts.push_back(o);
      std::vector<const char*> copts;
      for (const auto& o : opts) copts.push_back(o.c_str());
      nvrtcResult rc = nv.nvrtcCompileProgram(prog, int(copts.size()), copts.data());
      size_t log_size = 0;
      nv.nvrtcGetProgramLogSize(prog, &log_size);
      result.log.resize(log_size);
      if (log_size) nv.nvrtcGetProgramLog(prog, result.log.data());
      while (!result.log.empty() && result.log.back() == '\0') result.log.pop_back();
      if (rc == NVRTC_SUCCESS) {
        const char* lowered = nullptr;
        check_nvrtc(nv.nvrtcGetLoweredName(prog, req.name_expression.c_str(), &lowered), "nvrtcGetLoweredName");
        result.code.symbol = lowered;
        size_t size = 0;
        check_nvrtc(nv.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
        result.code.bytes.resize(size);
        check_nvrtc(nv.nvrtcGetCUBIN(prog, reinterpret_cast<char*>(result.code.bytes.data())), "nvrtcGetCUBIN");
        result.ok = true;
      } else if (result.log.empty()) {
        result.log = nv.nvrtcGetErrorString(rc);
      }
    } catch (const Error& e) {
      result.ok = false;
      result.log += e.what();
    }
    if (prog) api->nvrtcDestroyProgram(&prog);
    return result;
  }
};

// Makes `ctx` current for one call. A caller that had another context current (a trainer thread
// working on another GPU) gets it back afterwards; a thread with none keeps ours, which is the
// device's primary context, the one the CUDA runtime and cuBLAS use too.
class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    driver().cuCtxGetCurrent(&previous_);
    if (previous_ != ctx) check(driver().cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    restore_ = previous_ != nullptr && previous_ != ctx;
  }
  ~ContextScope() {
    if (restore_) driver().cuCtxSetCurrent(previous_);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

class CudaKernel final : public Kernel {
 public:
  CudaKernel(CUcontext ctx, CUmodule m, CUfunction f) : ctx_(ctx), module_(m), fn_(f) {}
  // How many clusters of `config`'s shape can be co-resident (cuOccupancyMaxActiveClusters),
  // asked once per block / cluster / shared-memory shape; 0 when the driver cannot tell.
  int max_active_clusters(const CUlaunchConfig& config, const CUlaunchAttribute& cluster) {
    const auto& dim = cluster.value.clusterDim;
    const std::array<unsigned, 7> key = {config.blockDimX, config.blockDimY, config.blockDimZ, config.sharedMemBytes,
                                         dim.x, dim.y, dim.z};
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [k, n] : clusters_)
      if (k == key) return n;
    int n = 0;
    if (!driver().cuOccupancyMaxActiveClusters || driver().cuOccupancyMaxActiveClusters(&n, fn_, &config) != CUDA_SUCCESS)
      n = 0;
    clusters_.emplace_back(key, n);
    return n;
  }
  ~CudaKernel() override {
    try {
      ContextScope scope(ctx_);
      driver().cuModuleUnload(module_);
    } catch (const Error&) {
      // the context is gone: so is the module
    }
  }
  CUfunction fn() const { return fn_; }

 private:
  CUcontext ctx_;
  CUmodule module_;
  CUfunction fn_;
  std::mutex mutex_;
  std::vector<std::pair<std::array<unsigned, 7>, int>> clusters_;
};

int attribute(CUdevice dev, CUdevice_attribute attr) {
  int v = 0;
  check(driver().cuDeviceGetAttribute(&v, attr, dev), "cuDeviceGetAttribute");
  return v;
}

DeviceInfo query(int index) {
  const Driver& d = driver();
  CUdevice dev;
  check(d.cuDeviceGet(&dev, index), "cuDeviceGet");
  DeviceInfo info;
  info.backend = BackendKind::Cuda;
  info.index = index;
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  info.name = name;
  info.arch = arch_name(attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                        attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  info.multiprocessors = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.shared_bytes_per_block = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.warp_size = attribute(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.cache_bytes = attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.shared_bytes_optin = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.compute_capability = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                            attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  int version = 0;
  d.cuDriverGetVersion(&version);
  info.driver_version = "cuda-" + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  return info;
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index) : info_(query(index)) {
    check(driver().cuDeviceGet(&dev_, index), "cuDeviceGet");
    check(driver().cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    ContextScope scope(ctx_);
  }
  ~CudaDevice() override {
    if (hold_module_) {
      ContextScope scope(ctx_);
      driver().cuCtxSynchronize();  // a spin kernel may still run
      driver().cuModuleUnload(hold_module_);
    }
    driver().cuDevicePrimaryCtxRelease(dev_);
  }

  const DeviceInfo& info() const override { return info_; }
  const Compiler& compiler() const override { return *compiler_; }

  std::shared_ptr<Kernel> load(const CodeObject& code) override {
    ContextScope scope(ctx_);
    CUmodule module;
    check(driver().cuModuleLoadData(&module, code.bytes.data()), "cuModuleLoadData");
    CUfunction fn;
    CUresult rc = driver().cuModuleGetFunction(&fn, module, code.symbol.c_str());
    if (rc != CUDA_SUCCESS) {
      driver().cuModuleUnload(module);
      check(rc, ("cuModuleGetFunction(" + code.symbol + ")").c_str());
    }
    return std::make_shared<CudaKernel>(ctx_, module, fn);
  }

  void launch(Kernel& kernel, const LaunchDims& d, const void* arg, std::size_t, Stream stream) override {
    ContextScope scope(ctx_);
    CudaKernel& k = static_cast<CudaKernel&>(kernel);
    CUfunction fn = k.fn();
    if (d.shared_bytes > 48 * 1024)
      check(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(d.shared_bytes)),
            "cuFuncSetAttribute");
    void* params[] = {const_cast<void*>(arg)};
    if (d.cluster[0] * d.cluster[1] * d.cluster[2] == 1) {
      check(driver().cuLaunchKernel(fn, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
                                    d.shared_bytes, static_cast<CUstream>(stream), params, nullptr),
            "cuLaunchKernel");
      return;
    }
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = d.cluster[0];
    cluster.value.clusterDim.y = d.cluster[1];
    cluster.value.clusterDim.z = d.cluster[2];
    CUlaunchConfig config{};
    config.gridDimX = d.grid[0];
    config.gridDimY = d.grid[1];
    config.gridDimZ = d.grid[2];
    config.blockDimX = d.block[0];
    config.blockDimY = d.block[1];
    config.blockDimZ = d.block[2];
    config.sharedMemBytes = d.shared_bytes;
    config.hStream = static_cast<CUstream>(stream);
    config.attrs = &cluster;
    config.numAttrs = 1;
    // A persistent grid asks for at most as many clusters as fit at once: more would wait for a
    // whole cluster to finish its share of the work. Unknown (old driver): the grid as computed.
    if (d.persistent && d.grid[1] == 1 && d.grid[2] == 1) {
      const int fit = k.max_active_clusters(config, cluster);
      if (fit > 0 && config.gridDimX > unsigned(fit) * d.cluster[0]) config.gridDimX = unsigned(fit) * d.cluster[0];
    }
    check(driver().cuLaunchKernelEx(&config, fn, params, nullptr), "cuLaunchKernelEx");
  }

  void* alloc(std::size_t bytes) override {
    ContextScope scope(ctx_);
    CUdeviceptr p = 0;
    check(driver().cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void free(void* ptr) noexcept override {
    if (!ptr) return;
    try {
      ContextScope scope(ctx_);
      driver().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
    } catch (const Error&) {
    }
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes), "cuMemcpyHtoD");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
  }
  void fill_bytes(void* dst, std::uint8_t value, std::size_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemsetD8(reinterpret_cast<CUdeviceptr>(dst), value, bytes), "cuMemsetD8");
  }
  void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
               std::size_t rows, Stream stream) override {
    ContextScope scope(ctx_);
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
    c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
    c.srcPitch = src_pitch, c.dstPitch = dst_pitch, c.WidthInBytes = width, c.Height = rows;
    check(driver().cuMemcpy2DAsync(&c, static_cast<CUstream>(stream)), "cuMemcpy2DAsync");
  }
  void synchronize() override {
    ContextScope scope(ctx_);
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize (a kernel faulted or timed out)");
  }
  Event create_event() override {
    ContextScope scope(ctx_);
    CUevent e;
    check(driver().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }
  void destroy_event(Event e) noexcept override { driver().cuEventDestroy(static_cast<CUevent>(e)); }
  void record(Event e, Stream s) override {
    ContextScope scope(ctx_);
    check(driver().cuEventRecord(static_cast<CUevent>(e), static_cast<CUstream>(s)), "cuEventRecord");
  }
  float elapsed_ms(Event a, Event b) override {
    check(driver().cuEventSynchronize(static_cast<CUevent>(b)), "cuEventSynchronize");
    float ms = 0;
    check(driver().cuEventElapsedTime(&ms, static_cast<CUevent>(a), static_cast<CUevent>(b)), "cuEventElapsedTime");
    return ms;
  }
  bool hold(double ms) override {
    ContextScope scope(ctx_);
    std::call_once(hold_once_, [&] {
      // PTX, JIT-compiled by the driver for this device: no NVRTC round trip per process. Where
      // the driver cannot JIT (CUDA_DISABLE_PTX_JIT) timing goes on without it.
      static const char kHoldPtx[] =
          ".version 6.0\n.target sm_50\n.address_size 64\n"
          ".visible .entry tt_hold(.param .u64 ns) {\n"
          "  .reg .u64 %t0, %t1, %d, %ns;\n  .reg .pred %p;\n"
          "  ld.param.u64 %ns, [ns];\n  mov.u64 %t0, %globaltimer;\n"
          "SPIN:\n  mov.u64 %t1, %globaltimer;\n  sub.u64 %d, %t1, %t0;\n"
          "  setp.lt.u64 %p, %d, %ns;\n  @%p bra SPIN;\n  ret;\n}\n";
      if (driver().cuModuleLoadData(&hold_module_, kHoldPtx) != CUDA_SUCCESS) {
        hold_module_ = nullptr;
        return;
      }
      if (driver().cuModuleGetFunction(&hold_fn_, hold_module_, "tt_hold") != CUDA_SUCCESS) {
        driver().cuModuleUnload(hold_module_);
        hold_module_ = nullptr;
        hold_fn_ = nullptr;
      }
    });
    if (!hold_fn_) return false;
    unsigned long long ns = static_cast<unsigned long long>(ms * 1e6);
    void* params[] = {&ns};
    check(driver().cuLaunchKernel(hold_fn_, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel(hold)");
    return true;
  }
  bool done(Event e) override {
    ContextScope scope(ctx_);
    return driver().cuEventQuery(static_cast<CUevent>(e)) == CUDA_SUCCESS;
  }

 private:
  std::once_flag hold_once_;
  CUmodule hold_module_ = nullptr;
  CUfunction hold_fn_ = nullptr;

  DeviceInfo info_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  std::unique_ptr<Compiler> compiler_ = with_compile_cache(std::make_unique<NvrtcCompiler>());
};

}  // namespace

std::string arch_name(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major >= 9 ? "a" : "");
}

std::unique_ptr<Compiler> make_compiler() { return std::make_unique<NvrtcCompiler>(); }

decltype(&::cuTensorMapEncodeTiled) tensor_map_encoder() {
  return driver().ok ? driver().cuTensorMapEncodeTiled : nullptr;
}

decltype(&::cuTensorMapEncodeIm2col) im2col_map_encoder() {
  return driver().ok ? driver().cuTensorMapEncodeIm2col : nullptr;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  if (!driver().ok) return out;
  int count = 0;
  if (driver().cuDeviceGetCount(&count) != CUDA_SUCCESS) return out;
  for (int i = 0; i < count; ++i) out.push_back(query(i));
  return out;
}

std::unique_ptr<Device> open_device(int index) {
  if (!driver().ok) throw Error("CUDA backend unavailable: " + driver().why);
  int count = 0;
  check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (index < 0 || index >= count)
    throw Error("CUDA device " + std::to_string(index) + " does not exist (" + std::to_string(count) + " found)");
  return std::make_unique<CudaDevice>(index);
}

}  // namespace tiletune::gpu::cuda
