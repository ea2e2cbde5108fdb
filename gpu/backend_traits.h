// What the layers above gpu/ may know of a backend: they ask its traits, never its kind. Each
// backend's traits live in its folder (gpu/<backend>/traits.h); gpu/backend_traits.cpp lists them,
// and gpu/backend.cpp its factories: a new backend is its folder plus those two lines.
#pragma once
#include <string>
#include <vector>

namespace tiletune::gpu {

enum class BackendKind;
struct DeviceInfo;

struct BackendTraits {
  BackendKind kind;
  const char* name;     // "cuda": configs, databases, the command line
  const char* prelude;  // the header every kernel source includes first ("": none)
  // The device's memory is the host's, and its "multiprocessors" the host's threads: operands,
  // references and output checks stay on the host, several logical workers share one CPU, and
  // a sweep compiles before it times (a compiler beside the timed kernels would disturb them).
  bool host_memory;
  // Finals are timed for this long (ms) so that clocks settle under sustained load; 0: as long
  // as any other timing (the config's target_ms).
  double final_ms;
  // `--backend auto` takes the built backend of the highest rank that finds a device.
  int auto_rank;
  // Threads one multiprocessor holds at once (the analytical model's occupancy).
  int threads_per_mp;
  // How its arch names begin ("sm_"); "": any name no other backend claims (the host's).
  const char* arch_prefix;
  // A device of this arch as the backend's toolchain knows it (limits that follow from the arch
  // alone), for `db explain` on a machine without that device; `measured` keeps the name and
  // multiprocessor count already filled in.
  void (*assume_from_arch)(DeviceInfo& d, bool measured);
};

// The number an arch name carries after `prefix` ("sm_90a", "sm_" -> 90); -1 when none (or absurd).
int arch_number(const std::string& arch, const char* prefix);

// The backend whose arch names look like `arch` (a database's arch without its device row).
const BackendTraits& traits_for_arch(const std::string& arch);

// Throws Error naming the input when no backend has that name.
const BackendTraits& traits(BackendKind kind);
const BackendTraits& traits_named(const std::string& name);
// Every backend tiletune knows, built into this binary or not, by descending auto_rank.
const std::vector<const BackendTraits*>& all_backend_traits();

}  // namespace tiletune::gpu
