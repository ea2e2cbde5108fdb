#include "gpu/hip/hip_backend.h"

#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>

#include "common/error.h"
#include "gpu/compile_cache.h"
#include "common/env.h"
#include "gpu/hip/arch_table.h"
#include "gpu/hip/code_object_info.h"
#include "gpu/hip/clang_compiler.h"
#include "gpu/hip/hip_api.h"

namespace tiletune::gpu::hip {

// ---------------------------------------------------------------------------------------------
// Arch list: the one place that says which targets hipRTC may see.

const std::vector<std::string>& supported_arches() {
  static const std::vector<std::string> arches = {"gfx908", "gfx90a", "gfx1030"};
  return arches;
}

bool arch_supported(const std::string& arch) {
  for (const auto& a : supported_arches())
    if (a == arch) return true;
  return false;
}

std::string supported_arches_text() {
  std::string s;
  for (const auto& a : supported_arches()) s += (s.empty() ? "" : ", ") + a;
  return s;
}

namespace {

[[noreturn]] void throw_hip(const char* call, hipError_t err) {
  const char* name = runtime().hipGetErrorName(err);
  const char* text = runtime().hipGetErrorString(err);
  throw Error(std::string(call) + " failed: " + (text ? text : "unknown error") + " (" +
              (name ? name : "?") + ", code " + std::to_string(static_cast<int>(err)) + ")");
}

// Throws Error naming the HIP call (not the whole expression) and hipGetErrorString.
#define TT_HIP_CALL(fn, ...)                                \
  do {                                                      \
    hipError_t tt_err_ = runtime().fn(__VA_ARGS__);         \
    if (tt_err_ != hipSuccess) throw_hip(#fn, tt_err_);     \
  } while (0)

bool kfd_present() { return ::access("/dev/kfd", F_OK) == 0; }

std::string version_text(int v) {  // HIP_VERSION encoding: major*1e7 + minor*1e5 + patch
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100) + "." +
         std::to_string(v % 100000);
}

// hipRTC 5.2 sits on comgr, which is not safe to drive from several threads at once (its LLVM
// actions share global state), so compiles are serialised process-wide. Parallel compilation
// would need worker processes.
std::mutex& hiprtc_mutex() {
  static std::mutex m;
  return m;
}

std::string hiprtc_status(const char* call, hiprtcResult r) {
  const char* s = hiprtc().hiprtcGetErrorString(r);
  return std::string(call) + " failed: " + (s ? s : "unknown hiprtc error") + " (code " +
         std::to_string(static_cast<int>(r)) + ")";
}

class HiprtcProgram {  // owns a hiprtcProgram
 public:
  HiprtcProgram() = default;
  HiprtcProgram(const HiprtcProgram&) = delete;
  HiprtcProgram& operator=(const HiprtcProgram&) = delete;
  ~HiprtcProgram() {
    if (prog_) hiprtc().hiprtcDestroyProgram(&prog_);
  }
  hiprtcProgram* out() { return &prog_; }
  hiprtcProgram get() const { return prog_; }

 private:
  hiprtcProgram prog_ = nullptr;
};

std::string program_log(hiprtcProgram prog) {
  std::size_t size = 0;
  if (hiprtc().hiprtcGetProgramLogSize(prog, &size) != HIPRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (hiprtc().hiprtcGetProgramLog(prog, log.data()) != HIPRTC_SUCCESS) return "";
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Which compiler takes an arch: hipRTC where it can, the offline clang (clang_compiler.h) for
// the arches it cannot take or when it is absent; TILETUNE_HIP_COMPILER=clang or =hiprtc picks one
// for every arch.
class HipCompiler final : public Compiler {
 public:
  HipCompiler() : choice_(env_text("TILETUNE_HIP_COMPILER").value_or("auto")), offline_(make_clang_compiler()) {
    if (choice_ != "auto" && choice_ != "clang" && choice_ != "hiprtc")
      throw Error("TILETUNE_HIP_COMPILER=" + choice_ + ": expected auto, clang or hiprtc");
    set_hiprtc_version();
    // The cache key names both, and the choice (which of them takes an arch): an object made by
    // either is never taken for the other's.
    if (choice_ != "hiprtc" && clang_toolchain().missing.empty()) version_ += "; " + offline_->version();
    if (choice_ != "auto") version_ += "; " + choice_ + " for every arch";
  }

  std::string version() const override { return version_; }

  CompileResult compile(const CompileRequest& request) const override {
    const bool hiprtc_can = hiprtc_missing().empty() && arch_supported(request.arch);
    const bool amd_name = request.arch.rfind("gfx", 0) == 0;  // else hipRTC's refusal names the arches
    if (choice_ == "clang" || (choice_ == "auto" && amd_name && !hiprtc_can && clang_toolchain().missing.empty()))
      return offline_->compile(request);
    CompileResult result = compile_hiprtc(request);
    if (!result.ok && !hiprtc_can && amd_name && choice_ == "auto")
      result.log += "\n(the offline AMD compiler cannot take it either: " + clang_toolchain().missing + ")";
    return result;
  }

 private:
  void set_hiprtc_version() {
    if (!hiprtc_missing().empty()) {  // only compiling fails, saying why
      version_ = "hiprtc-none";
      return;
    }
    int major = 0, minor = 0;
    if (hiprtc().hiprtcVersion(&major, &minor) == HIPRTC_SUCCESS)
      version_ = "hiprtc-" + std::to_string(major) + "." + std::to_string(minor);
    else
      version_ = "hiprtc-unknown";
    int rt = 0;
    if (runtime_missing().empty() && runtime().hipRuntimeGetVersion(&rt) == hipSuccess && rt > 0)
      version_ += "+hip-" + version_text(rt);
    else
      version_ += "+hip-headers-" + version_text(HIP_VERSION);
  }

  CompileResult compile_hiprtc(const CompileRequest& request) const {
    CompileResult result;
    if (!arch_supported(request.arch)) {
      result.log = "hipRTC: unsupported target arch '" + request.arch + "'; this HIP (" + version_ +
                   ") can compile for: " + supported_arches_text() +
                   " (other names are refused because hipRTC aborts the process on them)";
      return result;
    }
    if (!hiprtc_missing().empty()) {
      result.log = hiprtc_missing();
      return result;
    }

    std::vector<const char*> header_texts, header_names;
    header_texts.reserve(request.headers.size());
    header_names.reserve(request.headers.size());
    for (const auto& [name, text] : request.headers) {
      header_names.push_back(name.c_str());
      header_texts.push_back(text.c_str());
    }
    std::vector<std::string> opts = {"--offload-arch=" + request.arch, "-O3", "-std=c++17"};
    opts.insert(opts.end(), request.options.begin(), request.options.end());
    std::vector<const char*> opt_ptrs;
    for (const auto& o : opts) opt_ptrs.push_back(o.c_str());

    std::lock_guard<std::mutex> lock(hiprtc_mutex());
    HiprtcProgram prog;
    hiprtcResult r = hiprtc().hiprtcCreateProgram(prog.out(), request.source.c_str(), "tiletune_kernel.hip",
                                         static_cast<int>(header_texts.size()),
                                         header_texts.empty() ? nullptr : header_texts.data(),
                                         header_names.empty() ? nullptr : header_names.data());
    if (r != HIPRTC_SUCCESS) {
      result.log = hiprtc_status("hiprtcCreateProgram", r);
      return result;
    }
    if (!request.name_expression.empty()) {
      r = hiprtc().hiprtcAddNameExpression(prog.get(), request.name_expression.c_str());
      if (r != HIPRTC_SUCCESS) {
        result.log = hiprtc_status("hiprtcAddNameExpression", r) + " for '" + request.name_expression + "'";
        return result;
      }
    }
    r = hiprtc().hiprtcCompileProgram(prog.get(), static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
    result.log = program_log(prog.get());
    if (r != HIPRTC_SUCCESS) {
      std::string opts_text;
      for (const auto& o : opts) opts_text += " " + o;
      result.log = hiprtc_status("hiprtcCompileProgram", r) + " (options:" + opts_text + ")\n" + result.log;
      return result;
    }
    if (!request.name_expression.empty()) {
      const char* lowered = nullptr;
      r = hiprtc().hiprtcGetLoweredName(prog.get(), request.name_expression.c_str(), &lowered);
      if (r != HIPRTC_SUCCESS || !lowered || !*lowered) {
        result.log += (result.log.empty() ? "" : "\n") +
                      (r != HIPRTC_SUCCESS ? hiprtc_status("hiprtcGetLoweredName", r)
                                           : std::string("hiprtcGetLoweredName returned no name")) +
                      " for '" + request.name_expression + "'";
        return result;
      }
      result.code.symbol = lowered;
    }
    std::size_t size = 0;
    r = hiprtc().hiprtcGetCodeSize(prog.get(), &size);
    if (r != HIPRTC_SUCCESS || size == 0) {
      result.log += (result.log.empty() ? "" : "\n") +
                    (r != HIPRTC_SUCCESS ? hiprtc_status("hiprtcGetCodeSize", r)
                                         : std::string("hiprtcGetCodeSize: empty code object"));
      return result;
    }
    result.code.bytes.resize(size);
    r = hiprtc().hiprtcGetCode(prog.get(), reinterpret_cast<char*>(result.code.bytes.data()));
    if (r != HIPRTC_SUCCESS) {
      result.code = CodeObject{};
      result.log += (result.log.empty() ? "" : "\n") + hiprtc_status("hiprtcGetCode", r);
      return result;
    }
    result.ok = true;
    return result;
  }

  std::string choice_;
  std::unique_ptr<Compiler> offline_;
  std::string version_;
};

// ---------------------------------------------------------------------------------------------
// Devices

DeviceInfo query_device(int index) {
  hipDeviceProp_t props;
  std::memset(&props, 0, sizeof props);
  TT_HIP_CALL(hipGetDeviceProperties, &props, index);
  DeviceInfo info;
  info.backend = BackendKind::Hip;
  info.index = index;
  info.name = props.name;
  std::string gcn(props.gcnArchName, strnlen(props.gcnArchName, sizeof props.gcnArchName));
  info.arch = gcn.substr(0, gcn.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
  if (info.arch.empty() && props.gcnArch > 0) info.arch = "gfx" + std::to_string(props.gcnArch);
  info.multiprocessors = props.multiProcessorCount;
  info.max_threads_per_block = props.maxThreadsPerBlock;
  info.shared_bytes_per_block = static_cast<int>(props.sharedMemPerBlock);
  info.warp_size = props.warpSize;
  if (const AmdArch* a = amd_arch(info.arch)) {
    info.mfma_k16 = a->mfma_k16();
    info.mfma_k_fp8 = a->mfma_k("e4m3");
    info.mfma_k_int8 = a->mfma_k("s8");
  }
  int drv = 0;
  if (runtime().hipDriverGetVersion(&drv) == hipSuccess) info.driver_version = std::to_string(drv);
  int rt = 0;
  if (runtime().hipRuntimeGetVersion(&rt) == hipSuccess && rt > 0)
    info.driver_version += (info.driver_version.empty() ? "" : " ") + std::string("HIP ") + version_text(rt);
  return info;
}

class HipKernel final : public Kernel {
 public:
  HipKernel(int device, hipModule_t module, hipFunction_t function)
      : device_(device), module_(module), function_(function) {}
  ~HipKernel() override {
    (void)runtime().hipSetDevice(device_);
    (void)runtime().hipModuleUnload(module_);
  }
  HipKernel(const HipKernel&) = delete;
  HipKernel& operator=(const HipKernel&) = delete;
  hipFunction_t function() const { return function_; }
  int device() const { return device_; }

 private:
  int device_;
  hipModule_t module_;
  hipFunction_t function_;
};

class HipDevice final : public Device {
 public:
  explicit HipDevice(DeviceInfo info) : info_(std::move(info)) {}

  const DeviceInfo& info() const override { return info_; }
  const Compiler& compiler() const override { return *compiler_; }

  std::shared_ptr<Kernel> load(const CodeObject& code) override {
    if (code.bytes.empty()) throw Error("HIP load: empty code object");
    if (code.symbol.empty()) throw Error("HIP load: code object has no kernel symbol");
    bind();
    hipModule_t module = nullptr;
    TT_HIP_CALL(hipModuleLoadData, &module, code.bytes.data());
    hipFunction_t fn = nullptr;
    hipError_t err = runtime().hipModuleGetFunction(&fn, module, code.symbol.c_str());
    if (err != hipSuccess) {
      (void)runtime().hipModuleUnload(module);
      const char* text = runtime().hipGetErrorString(err);
      throw Error("hipModuleGetFunction failed for '" + code.symbol + "': " + (text ? text : "unknown error"));
    }
    return std::make_shared<HipKernel>(info_.index, module, fn);
  }

  void launch(Kernel& kernel, const LaunchDims& dims, const void* arg, std::size_t arg_size,
              Stream stream) override {
    auto* k = dynamic_cast<HipKernel*>(&kernel);
    if (!k) throw Error("HIP launch: kernel was not loaded by a HIP device");
    if (k->device() != info_.index)
      throw Error("HIP launch: kernel belongs to HIP device " + std::to_string(k->device()) +
                  ", not " + std::to_string(info_.index));
    if (!arg || arg_size == 0) throw Error("HIP launch: missing kernel argument");
    bind();
    // The single by-value struct argument: HIP copies arg_size bytes (per the kernel's metadata)
    // from the pointer in kernelParams[0].
    void* params[1] = {const_cast<void*>(arg)};
    TT_HIP_CALL(hipModuleLaunchKernel, k->function(), dims.grid[0], dims.grid[1], dims.grid[2],
                dims.block[0], dims.block[1], dims.block[2], dims.shared_bytes,
                static_cast<hipStream_t>(stream), params, nullptr);
  }

  void* alloc(std::size_t bytes) override {
    bind();
    void* p = nullptr;
    hipError_t err = runtime().hipMalloc(&p, bytes == 0 ? 1 : bytes);
    if (err != hipSuccess) {
      const char* text = runtime().hipGetErrorString(err);
      throw Error("hipMalloc of " + std::to_string(bytes) + " bytes failed: " + (text ? text : "unknown error"));
    }
    return p;
  }
  void free(void* ptr) noexcept override {
    if (!ptr) return;
    (void)runtime().hipSetDevice(info_.index);
    (void)runtime().hipFree(ptr);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    bind();
    TT_HIP_CALL(hipMemcpy, dst, src, bytes, hipMemcpyHostToDevice);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    bind();
    TT_HIP_CALL(hipMemcpy, dst, src, bytes, hipMemcpyDeviceToHost);
  }
  void fill_bytes(void* dst, std::uint8_t value, std::size_t bytes) override {
    bind();
    TT_HIP_CALL(hipMemset, dst, value, bytes);
  }
  void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
               std::size_t rows, Stream stream) override {
    bind();
    TT_HIP_CALL(hipMemcpy2DAsync, dst, dst_pitch, src, src_pitch, width, rows, hipMemcpyDeviceToDevice,
                static_cast<hipStream_t>(stream));
  }
  void synchronize() override {
    bind();
    hipError_t err = runtime().hipDeviceSynchronize();
    if (err != hipSuccess) throw_hip("hipDeviceSynchronize", err);
  }

  Event create_event() override {
    bind();
    hipEvent_t ev = nullptr;
    TT_HIP_CALL(hipEventCreate, &ev);
    return ev;
  }
  void destroy_event(Event event) noexcept override {
    if (event) (void)runtime().hipEventDestroy(static_cast<hipEvent_t>(event));
  }
  void record(Event event, Stream stream) override {
    bind();
    TT_HIP_CALL(hipEventRecord, static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream));
  }
  float elapsed_ms(Event start, Event stop) override {
    bind();
    TT_HIP_CALL(hipEventSynchronize, static_cast<hipEvent_t>(stop));
    float ms = 0.0f;
    TT_HIP_CALL(hipEventElapsedTime, &ms, static_cast<hipEvent_t>(start), static_cast<hipEvent_t>(stop));
    return ms;
  }

 private:
  // The current HIP device is per host thread; every call that touches the device sets it.
  void bind() { TT_HIP_CALL(hipSetDevice, info_.index); }

  DeviceInfo info_;
  std::unique_ptr<Compiler> compiler_ = with_compile_cache(std::make_unique<HipCompiler>());
};

}  // namespace

std::unique_ptr<Compiler> make_compiler() { return std::make_unique<HipCompiler>(); }

std::vector<DeviceInfo> list_devices() {
  // Without the kernel driver node there is no device; do not even load the runtime.
  if (!kfd_present() || !runtime_missing().empty()) return {};
  int count = 0;
  if (runtime().hipGetDeviceCount(&count) != hipSuccess || count <= 0) return {};
  std::vector<DeviceInfo> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) out.push_back(query_device(i));
  return out;
}

std::unique_ptr<Device> open_device(int index) {
  std::vector<DeviceInfo> devices = list_devices();
  if (index < 0 || index >= static_cast<int>(devices.size()))
    throw Error("HIP device index " + std::to_string(index) + " out of range: " +
                std::to_string(devices.size()) + " HIP device(s) found" +
                (!kfd_present()               ? " (no /dev/kfd: AMD GPU driver not present)"
                 : !runtime_missing().empty() ? " (" + runtime_missing() + ")"
                                              : std::string()));
  return std::make_unique<HipDevice>(std::move(devices[static_cast<std::size_t>(index)]));
}

std::string code_object_figures(const CodeObject& code, const std::string& arch) {
  const std::vector<AmdKernelInfo> kernels = read_amd_code_object(code.bytes);
  const AmdKernelInfo* k = nullptr;
  for (const auto& info : kernels)
    if (info.name == code.symbol) k = &info;
  if (!k) throw Error("kernel " + code.symbol + " is not in its code object's metadata");
  const std::string dis = disassemble_amd(code.bytes, arch);
  std::size_t mfma = 0;
  for (std::size_t at = dis.find("v_mfma"); at != std::string::npos; at = dis.find("v_mfma", at + 1)) ++mfma;
  auto field = [](const char* name, long long v) { return "\"" + std::string(name) + "\": " + std::to_string(v); };
  return "{" + field("vgpr", k->vgpr_count) + ", " + field("agpr", k->agpr_count) + ", " + field("sgpr", k->sgpr_count) +
         ", " + field("lds_bytes", k->lds_bytes) + ", " + field("scratch_bytes", k->private_bytes) + ", " +
         field("vgpr_spills", k->vgpr_spill_count) + ", " + field("sgpr_spills", k->sgpr_spill_count) + ", " +
         field("mfma_instructions", static_cast<long long>(mfma)) + "}";
}

}  // namespace tiletune::gpu::hip
