// Compiling in helper processes (`tune --compile-servers`). NVRTC serialises compiles inside one
// process: measured on a 2-core machine, two threads compile no faster than one (8 SIMT variants
// a second either way) while two processes compile twice as fast. On the 32-core H200 host the
// sweep's compile rate stayed at ~30 a second either way (18faf96), so something else bounds it
// there and the servers are opt-in. Each compile thread gets a `tiletune compile-server` process
// of its own, a gpu::Compiler behind a line protocol; a compiler that crashes or hangs costs
// that one code object (failed, with the reason) and a fresh server, not the sweep.
//
// Protocol, one JSON object per line:
//   server -> parent, once at start: {"hello": "tiletune-compile-server", "compiler": "nvrtc-13.0"}
//   parent -> server: {"source", "name_expression", "arch", "options": [...], "headers_id": "...",
//                      "headers": {name: text}}  ("headers" only the first time this server sees the id)
//   server -> parent: {"ok": bool, "log": "...", "symbol": "...", "bytes": "<hex>", "cpu_s": seconds}
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gpu/backend.h"

namespace tiletune::tuner {

class ProcessCompiler final : public gpu::Compiler {
 public:
  // `exe` is the tiletune program; `local` this process's compiler for the same backend (its
  // version names the code objects). A compile that takes longer than `timeout_s` is killed.
  ProcessCompiler(std::string exe, gpu::BackendKind backend, const gpu::Compiler& local, double timeout_s = 900);
  ~ProcessCompiler() override;

  std::string version() const override { return local_.version(); }
  // Thread-safe: each calling thread has a server of its own, started on its first call; it
  // outlives that thread (a new thread with a reused id takes it over) and ends with this object.
  gpu::CompileResult compile(const gpu::CompileRequest& request) const override;

 private:
  struct Server;
  Server& mine() const;
  bool ready(Server& s) const;  // started and said hello; false: compile in this process

  std::string exe_;
  gpu::BackendKind backend_;
  const gpu::Compiler& local_;
  double timeout_s_;
  mutable std::mutex mu_;
  mutable std::map<std::thread::id, std::unique_ptr<Server>> servers_;
};

// `tiletune compile-server`: compiles requests from stdin until it closes. Returns the exit status.
int run_compile_server(gpu::BackendKind backend);

}  // namespace tiletune::tuner
