#include "tools/report/peaks.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/backend_traits.h"
#include "solutions/model.h"

namespace tiletune::report {
namespace {

struct KnownDevice {
  const char* name_part;  // matched case-insensitively in the device's name; first match wins
  const char* also;       // and this too ("": nothing more)
  double f16, tf32, f32;  // TFLOP/s, dense (f32: the fastest f32 path without tf32)
  double tb_per_s;
};

// Vendors' datasheet figures. AMD's f32 is the matrix-core rate (MFMA f32); its tf32 is not
// offered (NaN) since tiletune does not compute f32 problems on reduced-precision matrix cores there.
const KnownDevice kKnown[] = {
    {"H200", "", 989, 494, 67, 4.8},
    {"H100", "PCIe", 756, 378, 51, 2.0},
    {"H100", "", 989, 494, 67, 3.35},
    {"A100", "80GB", 312, 156, 19.5, 2.039},
    {"A100", "", 312, 156, 19.5, 1.555},
    {"MI300X", "", 1307.4, NAN, 163.4, 5.3},
    {"MI250X", "", 383, NAN, 95.7, 3.2},
    {"MI250", "", 362.1, NAN, 90.5, 3.2},
    {"MI210", "", 181, NAN, 45.3, 1.6},
};

bool contains(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

}  // namespace

const char* to_string(Arithmetic a) {
  switch (a) {
    case Arithmetic::F16: return "f16/bf16";
    case Arithmetic::TF32: return "tf32";
    default: return "f32";
  }
}

Arithmetic arithmetic_of(const Problem& p) {
  const GemmProblem g = p.gemm_view();
  if (size_of(g.a_type) == 2) return Arithmetic::F16;
  return g.compute_tf32 ? Arithmetic::TF32 : Arithmetic::F32;
}

std::optional<DevicePeaks> peaks_of(const db::DeviceRow& d) {
  const gpu::BackendTraits* traits = nullptr;
  try {
    traits = &gpu::traits_named(d.backend);
  } catch (const Error&) {
    return std::nullopt;  // a backend this build does not know: nothing to say about its peaks
  }
  if (traits->host_memory) {
    gpu::DeviceInfo info;
    info.backend = traits->kind;
    info.multiprocessors = int(std::clamp<std::int64_t>(d.multiprocessors, 1, 1 << 20));
    DevicePeaks p;
    // The model gives one rate for every type on the host.
    p.f16 = p.tf32 = p.f32 = model_machine(info, GemmProblem{}).flops_per_s;
    p.source = "the analytical model's coarse assumption for the host (solutions/model.cpp: a rate per thread, " +
               std::to_string(info.multiprocessors) + " threads), not a measured or datasheet figure; memory "
               "bandwidth unknown";
    return p;
  }
  for (const KnownDevice& k : kKnown) {
    if (!contains(d.name, k.name_part) || !contains(d.name, k.also)) continue;
    DevicePeaks p;
    p.f16 = k.f16 * 1e12, p.tf32 = k.tf32 * 1e12, p.f32 = k.f32 * 1e12;
    p.bytes_per_s = k.tb_per_s * 1e12;
    p.source = std::string("datasheet figures for ") + k.name_part + (*k.also ? std::string(" ") + k.also : "") +
               " (tools/report/peaks.cpp), matched by the device's name";
    return p;
  }
  return std::nullopt;
}

double compulsory_bytes(const Problem& p) {
  if (p.is_conv()) {
    const ConvProblem& c = p.conv();
    const double in = size_of(c.in_type), out = size_of(c.out_type);
    const double x = double(c.elements_x()), w = double(c.elements_w()), y = double(c.elements_y());
    switch (c.direction) {
      case ConvDirection::Forward: return (x + w) * in + y * out;
      case ConvDirection::BackwardData: return (y + w) * in + x * out;
      default: return (x + y) * in + w * out;
    }
  }
  const GemmProblem& g = p.gemm();
  const double b = double(g.batch);
  const double c_passes = g.beta_zero ? 1 : 2;
  return b * (double(g.m * g.k + g.k * g.n) * size_of(g.a_type) + double(g.m * g.n) * size_of(g.c_type) * c_passes);
}

}  // namespace tiletune::report
