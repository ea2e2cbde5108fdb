#include "tuner/compile_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tuner/child_process.h"
#include "tuner/compile_pool.h"

namespace tiletune::tuner {
namespace {

using json = nlohmann::json;
using Clock = ChildProcess::Clock;

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string s(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

std::vector<std::uint8_t> from_hex(const std::string& s) {
  auto value = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error("compile server: bad hex digit in a code object");
  };
  if (s.size() % 2) throw Error("compile server: odd-length hex code object");
  std::vector<std::uint8_t> bytes(s.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(value(s[2 * i]) << 4 | value(s[2 * i + 1]));
  return bytes;
}

// Names the header set of a request, so that each server receives it once.
std::string headers_id(const std::map<std::string, std::string>& headers) {
  std::size_t h = headers.size();
  for (const auto& [name, text] : headers) {
    h = h * 1000003u ^ std::hash<std::string>{}(name);
    h = h * 1000003u ^ std::hash<std::string>{}(text);
  }
  char id[32];
  std::snprintf(id, sizeof id, "%016zx", h);
  return id;
}

gpu::CompileResult failed(std::string why) {
  gpu::CompileResult r;
  r.log = std::move(why);
  return r;
}

}  // namespace

struct ProcessCompiler::Server {
  explicit Server(const std::string& exe, gpu::BackendKind backend)
      : child("compile server", {exe, "compile-server", "--backend", gpu::to_string(backend)}, /*with_thread=*/false) {}
  ChildProcess child;
  std::set<std::string> has;  // header ids this server process holds
  bool broken = false;        // could not start: compile in this process instead
};

ProcessCompiler::ProcessCompiler(std::string exe, gpu::BackendKind backend, const gpu::Compiler& local,
                                 double timeout_s)
    : exe_(std::move(exe)), backend_(backend), local_(local), timeout_s_(timeout_s) {}

ProcessCompiler::~ProcessCompiler() = default;

ProcessCompiler::Server& ProcessCompiler::mine() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = servers_[std::this_thread::get_id()];
  if (!s) s = std::make_unique<Server>(exe_, backend_);
  return *s;
}

bool ProcessCompiler::ready(Server& s) const {
  if (s.broken) return false;
  if (s.child.running()) return true;
  s.has.clear();
  std::string why;
  try {
    s.child.start();
    std::string line;
    if (s.child.read_line(line, Clock::now() + std::chrono::seconds(60)) != ChildProcess::Read::Line)
      why = s.child.stop(true);
    else if (json::parse(line, nullptr, false).value("hello", "") != "tiletune-compile-server")
      why = "it answered '" + line.substr(0, 200) + "'", s.child.stop(true);
  } catch (const Error& e) {
    why = e.what();
  }
  if (why.empty()) return true;
  std::fprintf(stderr, "tiletune: a compile server (%s compile-server) did not start (%s); compiling in this process\n",
               exe_.c_str(), why.c_str());
  s.broken = true;
  return false;
}

gpu::CompileResult ProcessCompiler::compile(const gpu::CompileRequest& r) const {
  Server& s = mine();
  if (!ready(s)) return local_.compile(r);

  const std::string id = headers_id(r.headers);
  json j = {{"source", r.source}, {"name_expression", r.name_expression}, {"arch", r.arch}, {"options", r.options},
            {"headers_id", id}};
  auto request = [&] {
    if (!s.has.count(id)) j["headers"] = r.headers;
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  if (!s.child.send(request())) {
    // Gone while idle: not this request's doing; once more on a fresh server.
    s.child.stop(false);
    if (!ready(s)) return local_.compile(r);
    if (!s.child.send(request())) return failed(s.child.stop(false) + " before the compile");
  }
  s.has.insert(id);

  std::string line;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  switch (s.child.read_line(line, deadline)) {
    case ChildProcess::Read::Timeout: {
      s.child.stop(true);
      char text[120];
      std::snprintf(text, sizeof text, "the compile took longer than %g s; compile server killed", timeout_s_);
      return failed(text);
    }
    case ChildProcess::Read::Eof: return failed(s.child.stop(false) + " while compiling");
    case ChildProcess::Read::Line: break;
  }
  const json reply = json::parse(line, nullptr, false);
  if (!reply.is_object()) {
    s.child.stop(true);
    return failed("the compile server wrote a line that is not JSON: " + line.substr(0, 200));
  }
  gpu::CompileResult out;
  try {
    out.ok = reply.value("ok", false);
    out.log = reply.value("log", "");
    out.code.symbol = reply.value("symbol", "");
    out.code.bytes = from_hex(reply.value("bytes", ""));
    out.cpu_s = reply.value("cpu_s", -1.0);
  } catch (const std::exception& e) {  // wrong field types, bad hex: this code object fails, not the sweep
    s.child.stop(true);
    return failed(std::string("the compile server's answer is malformed: ") + e.what());
  }
  return out;
}

int run_compile_server(gpu::BackendKind backend) {
  // As the measuring worker: the protocol owns the original stdout, anything else printed goes to stderr.
  std::fflush(stdout);
  int proto_fd = ::dup(1);
  if (proto_fd < 0 || ::dup2(2, 1) < 0)
    throw Error(std::string("compile server: cannot set up stdout: ") + std::strerror(errno));
  ::fcntl(proto_fd, F_SETFD, FD_CLOEXEC);
  auto reply = [&](const json& j) {
    // Replace, not throw, on bytes that are not UTF-8 in a compiler's log.
    if (!write_all(proto_fd, j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n")) std::exit(0);
  };

  std::unique_ptr<gpu::Compiler> compiler = gpu::make_compiler(backend);
  reply({{"hello", "tiletune-compile-server"}, {"compiler", compiler->version()}});
  std::map<std::string, std::map<std::string, std::string>> headers;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    gpu::CompileResult result;
    try {
      const json j = json::parse(line);
      const std::string id = j.at("headers_id").get<std::string>();
      if (j.contains("headers")) headers[id] = j.at("headers").get<std::map<std::string, std::string>>();
      gpu::CompileRequest r;
      r.source = j.at("source").get<std::string>();
      r.name_expression = j.at("name_expression").get<std::string>();
      r.arch = j.at("arch").get<std::string>();
      r.options = j.at("options").get<std::vector<std::string>>();
      auto it = headers.find(id);
      if (it == headers.end()) throw Error("compile server: headers " + id + " were never sent");
      r.headers = it->second;
      const double c0 = thread_cpu_seconds();
      result = compiler->compile(r);
      result.cpu_s = thread_cpu_seconds() - c0;
    } catch (const json::exception& e) {
      result = failed(std::string("compile server: bad request: ") + e.what());
    } catch (const Error& e) {
      result = failed(e.what());
    }
    reply({{"ok", result.ok}, {"log", result.log}, {"symbol", result.code.symbol}, {"bytes", to_hex(result.code.bytes)},
           {"cpu_s", result.cpu_s}});
  }
  return 0;
}

}  // namespace tiletune::tuner
