// The device's vendor libraries behind one call for a problem of any kind: cuBLAS and cuDNN on
// CUDA, rocBLAS and MIOpen on HIP, OpenBLAS on the host. The tuner times them as a candidate of every problem (they can win)
// and the runtime runs them for problems no tuned kernel serves.
#pragma once
#include <cstdlib>
#include <memory>
#include <string>

#include "common/env.h"
#include "solutions/problem.h"
#include "vendors/vendor_conv.h"
#include "vendors/vendor_gemm.h"

namespace tiletune::gpu {

// What each backend's vendor libraries compute, known without loading them (`db explain` states
// the ladder without a device): "" when the problem is in their scope, else why not. A library
// that fails to load at run time narrows this further (Vendor::unsupported).
// TILETUNE_VENDOR=off (or 0) takes the vendor out of sweeps and of the ladder everywhere; a value
// it does not take is an Error naming it.
inline bool vendor_disabled() { return !env_switch("TILETUNE_VENDOR", true); }

// `disabled`: vendor_disabled(), read once by the caller (it is on every call's path).
inline std::string vendor_scope(BackendKind backend, const Problem& p, bool disabled = vendor_disabled()) {
  if (disabled) return "the vendor library is disabled (TILETUNE_VENDOR=off)";
  switch (backend) {
    case BackendKind::Cuda:
      if (p.is_conv() && p.conv().in_type != p.conv().out_type)
        return "cuDNN's legacy API needs one type for all tensors";
      return "";
    case BackendKind::Host:
      if (p.is_conv()) return "no vendor convolution on the host backend";
      if (p.gemm().a_type != DataType::F32 || p.gemm().c_type != DataType::F32 || p.gemm().compute_tf32)
        return "OpenBLAS computes fp32 GEMMs only";
      return "";
    case BackendKind::Hip:
      if (p.is_conv()) return p.conv().in_type != p.conv().out_type ? "MIOpen is given one type for all tensors here" : "";
      if (p.gemm().compute_tf32) return "rocBLAS has no tf32 GEMM";
      if (size_of(p.gemm().a_type) == 1) return "the rocBLAS rung is not wired for fp8 or int8 GEMMs (hipBLASLt's)";
      return "";
  }
  return "unknown backend";
}

class Vendor {
 public:
  // Loads the libraries the backend has. A library that is missing, or TILETUNE_VENDOR=off, leaves
  // that kind unsupported with the reason; nothing here throws for it.
  explicit Vendor(Device& dev);
  ~Vendor();
  // The library for problems of this kind ("" when there is none).
  std::string name(ProblemKind kind) const;
  // "" when the library computes `p`, else why not.
  std::string unsupported(const Problem& p) const;
  // The library's name as a source of the "vendor" template's solutions: `choice` {} is its
  // default call, other choices name the library that runs them (for example cuBLASLt), with
  // its version where one is published.
  std::string source(const Problem& p, const VendorChoice& choice) const;
  // The library's other algorithms for `p` at these arguments (VendorLibrary::alternatives):
  // cuBLASLt's heuristic's, cuDNN's engine configurations.
  std::vector<VendorChoice> alternatives(const Problem& p, const void* args, int limit);
  // Enqueues `p` on `stream` with `args`: a TtGemmParams for a GEMM, a TtConvParams for a
  // convolution, with the algorithm `choice` ({}: the library's default). Throws Error on
  // failure; safe from several threads at once.
  void run(const Problem& p, const void* args, Stream stream, const VendorChoice& choice = {});
  // See VendorLibrary::set_strict.
  void set_strict(bool on) {
    if (gemm_) gemm_->set_strict(on);
    if (conv_) conv_->set_strict(on);
  }
  // What the library's default call chose for `p` (VendorLibrary::algorithm).
  std::string algorithm(const Problem& p) const;

 private:
  std::unique_ptr<VendorGemm> gemm_;
  std::unique_ptr<VendorConv> conv_;
  BackendKind backend_;
  bool disabled_;
  std::string gemm_missing_, conv_missing_;  // why each is null

  // f(library, typed problem, typed arguments) for the library of p's kind, which must be loaded.
  template <class F>
  decltype(auto) visit(const Problem& p, const void* args, F&& f) const {
    if (p.is_conv()) return f(*conv_, p.conv(), *static_cast<const TtConvParams*>(args));
    return f(*gemm_, p.gemm(), *static_cast<const TtGemmParams*>(args));
  }
};

}  // namespace tiletune::gpu
