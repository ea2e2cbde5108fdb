// A compile cache on disk, shared by a user's processes: TILETUNE_COMPILE_CACHE names its
// directory. A kernel built from source once is read from there by every later sweep, runtime,
// online tuner or compile server that asks for the same instantiation, instead of being compiled
// again (a trainer's start-up, a rerun of a sweep into a new database, a test suite). Unset, nothing
// is cached beyond what each database keeps.
//
// Its files are code that the process loads and runs, as a database's code objects are: the
// directory must belong to the user and be closed to writes by others, and so must each file;
// each file carries the SHA-256 of its contents, so a torn or damaged one is compiled again rather
// than loaded. Who can write the directory decides what runs.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "gpu/backend.h"

namespace tiletune::gpu {

// Everything a code object is built from: the compiler (its version()), the arch, the name
// expression, the source, each header and each option. SHA-256, lower-case hex.
std::string compile_key(const CompileRequest& request, const std::string& compiler_version);

class CompileCache {
 public:
  // Makes the directory (mode 0700) when it is missing. Throws Error naming it when it cannot be
  // made, is not a directory, belongs to another user, or others may write to it.
  explicit CompileCache(const std::filesystem::path& dir);

  // The result stored under `key`; nothing for a missing, damaged or foreign file.
  std::optional<CompileResult> find(const std::string& key) const;
  // Stores a successful compile under `key` (a temporary file renamed into place, so a reader sees
  // a whole file or none). Best effort: a cache that cannot be written is only a slower one.
  void put(const std::string& key, const CompileResult& result) const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// `inner` behind the cache of TILETUNE_COMPILE_CACHE; `inner` itself when the variable is unset
// or empty, or when the directory is refused (then a warning on stderr names the variable and
// the cause, once per process).
std::unique_ptr<Compiler> with_compile_cache(std::unique_ptr<Compiler> inner);

}  // namespace tiletune::gpu
