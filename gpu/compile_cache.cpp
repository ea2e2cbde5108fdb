#include "gpu/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>

#include "common/env.h"
#include "common/error.h"
#include "common/sha256.h"

namespace tiletune::gpu {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "tiletune-compile-cache 1\n";
constexpr std::size_t kHashChars = 64;
constexpr off_t kLargestFile = off_t(1) << 30;  // no code object comes near; a larger file is not one of ours

// Length-prefixed, so that no two requests' fields run together into the same text.
void field(std::string& all, const std::string& text) { all += std::to_string(text.size()) + ":" + text + "\n"; }

// Why a file or directory may not hold code this process runs; empty when it may.
std::string ownership_problem(const struct stat& st) {
  if (st.st_uid != geteuid()) return "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return std::string("others may write to it (mode ") + mode + "; chmod go-w it)";
  }
  return "";
}

class CachingCompiler final : public Compiler {
 public:
  CachingCompiler(std::unique_ptr<Compiler> inner, CompileCache cache)
      : inner_(std::move(inner)), cache_(std::move(cache)) {}

  std::string version() const override { return inner_->version(); }

  CompileResult compile(const CompileRequest& request) const override {
    const std::string key = compile_key(request, inner_->version());
    if (std::optional<CompileResult> hit = cache_.find(key)) {
      hit->cpu_s = 0;  // nothing was compiled
      return *std::move(hit);
    }
    CompileResult result = inner_->compile(request);
    if (result.ok) cache_.put(key, result);
    return result;
  }

 private:
  std::unique_ptr<Compiler> inner_;
  CompileCache cache_;
};

}  // namespace

std::string compile_key(const CompileRequest& r, const std::string& compiler_version) {
  std::string all = "tiletune compile key 1\n";
  field(all, compiler_version);
  field(all, r.arch);
  field(all, r.name_expression);
  field(all, sha256_hex(r.source));
  for (const auto& [name, text] : r.headers) field(all, name), field(all, sha256_hex(text));
  all += "options\n";
  for (const auto& o : r.options) field(all, o);
  return sha256_hex(all);
}

CompileCache::CompileCache(const fs::path& dir) : dir_(fs::absolute(dir)) {
  const std::string where = "compile cache " + dir_.string();
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    if (dir_.has_parent_path()) fs::create_directories(dir_.parent_path(), ec);
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
      throw Error(where + ": cannot make it: " + std::strerror(errno));
  }
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) throw Error(where + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw Error(where + ": not a directory");
  if (std::string why = ownership_problem(st); !why.empty()) throw Error(where + ": " + why);
}

std::optional<CompileResult> CompileCache::find(const std::string& key) const {
  const fs::path path = dir_ / (key + ".kernel");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  struct stat st {};
  bool ours = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ownership_problem(st).empty() &&
              st.st_size <= kLargestFile;
  if (ours) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ours = got == text.size();
  }
  ::close(fd);
  // magic, "<symbol> <log> <bytes>\n" (lengths), the three, the SHA-256 of all that went before
  const std::size_t magic = std::strlen(kMagic);
  if (!ours || text.size() < magic + kHashChars || text.compare(0, magic, kMagic) != 0) return std::nullopt;
  const std::size_t body = text.size() - kHashChars;
  if (sha256_hex(text.data(), body) != text.substr(body)) return std::nullopt;
  const std::size_t eol = text.find('\n', magic);
  if (eol == std::string::npos || eol >= body) return std::nullopt;
  std::istringstream sizes(text.substr(magic, eol - magic));
  std::size_t symbol = 0, log = 0, bytes = 0;
  if (!(sizes >> symbol >> log >> bytes) || eol + 1 + symbol + log + bytes != body) return std::nullopt;
  CompileResult r;
  r.ok = true;
  std::size_t at = eol + 1;
  r.code.symbol = text.substr(at, symbol), at += symbol;
  r.log = text.substr(at, log), at += log;
  r.code.bytes.assign(text.begin() + static_cast<std::ptrdiff_t>(at), text.begin() + static_cast<std::ptrdiff_t>(body));
  return r;
}

void CompileCache::put(const std::string& key, const CompileResult& r) const {
  if (!r.ok) return;  // a failure is compiled again: the next attempt may have another compiler
  std::string text = kMagic;
  text += std::to_string(r.code.symbol.size()) + " " + std::to_string(r.log.size()) + " " +
          std::to_string(r.code.bytes.size()) + "\n";
  text += r.code.symbol;
  text += r.log;
  text.append(r.code.bytes.begin(), r.code.bytes.end());
  text += sha256_hex(text);
  static std::atomic<unsigned long> serial{0};
  const fs::path tmp = dir_ / ("." + key + "." + std::to_string(::getpid()) + "." + std::to_string(serial++) + ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::size_t put = 0;
  while (put < text.size()) {
    const ssize_t n = ::write(fd, text.data() + put, text.size() - put);
    if (n <= 0) break;
    put += static_cast<std::size_t>(n);
  }
  const bool whole = ::close(fd) == 0 && put == text.size();
  if (!whole || ::rename(tmp.c_str(), (dir_ / (key + ".kernel")).c_str()) != 0) ::unlink(tmp.c_str());
}

std::unique_ptr<Compiler> with_compile_cache(std::unique_ptr<Compiler> inner) {
  const std::optional<std::string> dir = env_text("TILETUNE_COMPILE_CACHE");
  if (!dir) return inner;
  std::optional<CompileCache> cache;
  try {
    cache.emplace(*dir);
  } catch (const Error& e) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr, "tiletune: warning: TILETUNE_COMPILE_CACHE: %s; compiling without it\n", e.what());
    });
    return inner;
  }
  return std::make_unique<CachingCompiler>(std::move(inner), std::move(*cache));
}

}  // namespace tiletune::gpu
