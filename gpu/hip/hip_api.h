// The HIP runtime and hipRTC functions the HIP backend calls, opened with dlopen at first use (as
// the CUDA driver and NVRTC are): the runtime library then loads on a machine without ROCm, and
// only HIP calls fail there, naming what was tried. TILETUNE_HIP_LIB names the libamdhip64 to
// use instead of looking. Needs the HIP headers: included by the HIP backend's sources only.
#pragma once
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <string>

namespace tiletune::gpu::hip {

// hipMalloc is left out: C++ overloads it (typed-pointer templates), so its type is spelled out
// below instead of taken with decltype.
#define TT_HIP_RUNTIME_FUNCS(X)                                                                              \
  X(hipGetErrorName) X(hipGetErrorString) X(hipRuntimeGetVersion) X(hipDriverGetVersion) X(hipGetDeviceCount) \
  X(hipGetDeviceProperties) X(hipSetDevice) X(hipDeviceSynchronize) X(hipFree) X(hipMemcpy) X(hipMemset)    \
  X(hipMemcpy2DAsync) X(hipModuleLoadData) X(hipModuleGetFunction) X(hipModuleUnload) X(hipModuleLaunchKernel) \
  X(hipEventCreate) X(hipEventDestroy) X(hipEventRecord) X(hipEventSynchronize) X(hipEventElapsedTime)
#define TT_HIPRTC_FUNCS(X)                                                                              \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcDestroyProgram)              \
  X(hiprtcAddNameExpression) X(hiprtcCompileProgram) X(hiprtcGetLoweredName) X(hiprtcGetProgramLogSize) \
  X(hiprtcGetProgramLog) X(hiprtcGetCodeSize) X(hiprtcGetCode)

#define TT_HIP_DECLARE(name) decltype(&::name) name = nullptr;
struct HipRuntime {
  TT_HIP_RUNTIME_FUNCS(TT_HIP_DECLARE)
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;
};
struct Hiprtc {
  TT_HIPRTC_FUNCS(TT_HIP_DECLARE)
};
#undef TT_HIP_DECLARE

// The tables, resolved once; each throws Error saying what was tried when its library cannot be
// loaded or lacks a function.
const HipRuntime& runtime();
const Hiprtc& hiprtc();
// Why runtime() / hiprtc() throw; "" when they do not.
const std::string& runtime_missing();
const std::string& hiprtc_missing();

}  // namespace tiletune::gpu::hip
