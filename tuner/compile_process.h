// Compiling in helper processes. NVRTC serialises compiles inside one process: measured on a
// 2-core machine, two threads compile no faster than one (8 SIMT variants a second either way)
// while two processes compile twice as fast. A sweep on a GPU backend therefore compiles in
// `tiletune compile-server` processes, one per compile thread, each a gpu::Compiler behind a line
// protocol; a compiler that crashes or hangs costs that one code object (failed, with the
// reason) and a fresh server, not the sweep.
//
// Protocol, one JSON object per line:
//   server -> parent, once at start: {"hello": "tiletune-compile-server", "compiler": "nvrtc-13.0"}
//   parent -> server: {"source", "name_expression", "arch", "options": [...], "headers_id": "...",
//                      "headers": {name: text}}  ("headers" only the first time this server sees the id)
//   server -> parent: {"ok": bool, "log": "...", "symbol": "...", "bytes": "<hex>"}
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace tiletune::tuner {

class ProcessCompiler final : public gpu::Compiler {
 public:
  // `exe` is the tiletune program; `local` this process's compiler for the same backend (its
  // version names the code objects). A compile that takes longer than `timeout_s` is killed.
  ProcessCompiler(std::string exe, gpu::BackendKind backend, const gpu::Compiler& local, double timeout_s = 900);
  ~ProcessCompiler() override;

  std::string version() const override { return local_.version(); }
  // Thread-safe: each concurrent call gets a server of its own (started on first use).
  gpu::CompileResult compile(const gpu::CompileRequest& request) const override;

 private:
  struct Server;
  std::unique_ptr<Server> take() const;
  void give_back(std::unique_ptr<Server> s) const;

  std::string exe_;
  gpu::BackendKind backend_;
  const gpu::Compiler& local_;
  double timeout_s_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Server>> idle_;
};

// `tiletune compile-server`: compiles requests from stdin until it closes. Returns the exit status.
int run_compile_server(gpu::BackendKind backend);

}  // namespace tiletune::tuner
