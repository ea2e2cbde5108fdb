// The roofline's two numbers for a device: peak arithmetic rate (per class of arithmetic) and
// memory bandwidth. A database records a device's backend, arch, name and multiprocessor count,
// not its clocks or bandwidth (devices report neither), so the figures come from a table of
// datasheet values matched by device name; the report says which entry it used, or that none did.
#pragma once
#include <cmath>
#include <optional>
#include <string>

#include "db/records.h"
#include "solutions/problem.h"

namespace tiletune::report {

// Which peak bounds a problem: f16/bf16 on tensor cores, f32 on tf32 tensor cores, plain f32.
enum class Arithmetic { F16, TF32, F32 };
const char* to_string(Arithmetic a);  // "f16/bf16", "tf32", "f32"
Arithmetic arithmetic_of(const Problem& p);

struct DevicePeaks {
  std::string source;                 // where the figures come from, for the page
  double f16 = NAN, tf32 = NAN, f32 = NAN;  // FLOP/s, dense; NaN: not known
  double bytes_per_s = NAN;           // device memory; NaN: not known (the roofline has no slope)
  double flops(Arithmetic a) const { return a == Arithmetic::F16 ? f16 : a == Arithmetic::TF32 ? tf32 : f32; }
};

// The entry for this device, or nullopt for one the table does not know. The host's are the
// analytical model's coarse per-thread assumption (solutions/model.cpp), said so in `source`.
std::optional<DevicePeaks> peaks_of(const db::DeviceRow& d);

// The least bytes a problem moves to and from device memory: each operand read once and the
// result written once (read too when a GEMM's beta is not zero).
double compulsory_bytes(const Problem& p);

}  // namespace tiletune::report
