#include "gpu/hip/clang_compiler.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "common/env.h"
#include "common/error.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "gpu/hip/code_object_info.h"

namespace tiletune::gpu::hip {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProbe = "tt_name_probe";
// Where scripts/install-deps.sh puts hiprtc_runtime.h (from PyPI's rocm-llvm-python wheel).
constexpr const char* kHeaderDefault = "/usr/local/share/tiletune/hiprtc/hiprtc_runtime.h";

bool readable(const std::string& path) { return !path.empty() && ::access(path.c_str(), R_OK) == 0; }

std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string s(out);
  std::free(out);
  return s;
}

// Accepts what clang's --offload-arch takes for AMD ("gfx942", "gfx90a:xnack-"), nothing that
// could be read as another option.
bool plausible_arch(const std::string& arch) {
  if (arch.size() < 4 || arch.size() > 64 || arch.compare(0, 3, "gfx") != 0) return false;
  for (char c : arch)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '+' || c == '-')) return false;
  return true;
}

ClangToolchain find_toolchain() {
  ClangToolchain t;
  const std::string clang = env_text("TILETUNE_HIP_CLANG").value_or("clang-22");
  t.clang = find_program(clang);
  if (t.clang.empty() || ::access(t.clang.c_str(), X_OK) != 0) {
    t.clang.clear();
    t.missing = "clang for AMDGPU not found ('" + clang + "'; install clang-22 lld-22 llvm-22 or set TILETUNE_HIP_CLANG)";
    return t;
  }
  t.header = env_text("TILETUNE_HIPRTC_HEADER").value_or(kHeaderDefault);
  if (!readable(t.header)) {
    t.missing = "hipRTC's builtin header not found at " + t.header +
                " (scripts/install-deps.sh fetches it from PyPI's rocm-llvm-python; or set TILETUNE_HIPRTC_HEADER)";
    return t;
  }
  std::vector<std::string> dirs;
  if (auto d = env_text("TILETUNE_ROCM_DEVICE_LIBS")) dirs = {*d};
  else dirs = {"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode", "/opt/rocm/amdgcn/bitcode"};
  for (const auto& d : dirs)
    if (readable(d + "/ocml.bc") && readable(d + "/ockl.bc")) {
      t.bitcode_dir = d;
      return t;
    }
  std::string tried;
  for (const auto& d : dirs) tried += (tried.empty() ? "" : ", ") + d;
  t.missing = "ROCm device libraries (ocml.bc, ockl.bc) not found in " + tried +
              " (install rocm-device-libs or set TILETUNE_ROCM_DEVICE_LIBS)";
  return t;
}

// The device-library bitcode a kernel links, as hipRTC configures it: default float modes and
// the arch's wave size. The ISA-version library is linked where the installed libraries have one.
std::vector<std::string> bitcode_options(const ClangToolchain& t, const std::string& arch) {
  const std::string gfx = arch.substr(3, arch.find(':') == std::string::npos ? std::string::npos : arch.find(':') - 3);
  const bool wave32 = gfx.size() >= 4;  // gfx10xx, gfx11xx, gfx12xx: RDNA, wave32 under HIP
  std::vector<std::string> libs = {"ocml", "ockl", "oclc_daz_opt_off", "oclc_unsafe_math_off",
                                   "oclc_finite_only_off", "oclc_correctly_rounded_sqrt_on",
                                   wave32 ? "oclc_wavefrontsize64_off" : "oclc_wavefrontsize64_on",
                                   "oclc_abi_version_500", "oclc_isa_version_" + gfx};
  std::vector<std::string> out;
  for (const auto& l : libs) {
    const std::string path = t.bitcode_dir + "/" + l + ".bc";
    if (!readable(path)) continue;
    out.insert(out.end(), {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", path});
  }
  return out;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error("cannot write " + path.string());
}

class ClangCompiler final : public Compiler {
 public:
  std::string version() const override {
    static const std::string v = [] {
      const ClangToolchain& t = clang_toolchain();
      if (!t.missing.empty()) return std::string("clang-none");
      std::string first = "unknown";
      try {
        ProgramOutput out = run_program({t.clang, "--version"});
        if (out.status == 0) first = out.text.substr(0, out.text.find('\n'));
      } catch (const Error&) {
      }
      return "clang-offline " + first;
    }();
    return v;
  }

  CompileResult compile(const CompileRequest& req) const override {
    CompileResult result;
    const ClangToolchain& t = clang_toolchain();
    if (!t.missing.empty()) {
      result.log = "offline AMD compiler: " + t.missing;
      return result;
    }
    if (!plausible_arch(req.arch)) {
      result.log = "offline AMD compiler: '" + req.arch + "' is not an AMDGPU arch name (gfx...)";
      return result;
    }
    // Failing to make or fill the directory, or to start clang, is thrown: the environment's
    // fault, never recorded against the candidate.
    const TempDir temp("tiletune-hipclang-");
    const fs::path& dir = temp.path();
    for (const auto& [name, text] : req.headers) write_file(dir / name, text);
    write_file(dir / "tu.hip", req.source + "\n" + probe_source(req.name_expression));
    std::vector<std::string> argv = {t.clang, "-x", "hip", "--offload-arch=" + req.arch, "--cuda-device-only",
                                     "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib", "-D__HIPCC_RTC__",
                                     "-include", t.header, "-O3", "-std=c++17", "-I" + dir.string(),
                                     // v5, what ROCm 6's compilers make: clang 22 would write v6,
                                     // which older runtimes refuse.
                                     "-mcode-object-version=5"};
    const auto libs = bitcode_options(t, req.arch);
    argv.insert(argv.end(), libs.begin(), libs.end());
    argv.insert(argv.end(), req.options.begin(), req.options.end());
    argv.insert(argv.end(), {"-o", (dir / "k.co").string(), (dir / "tu.hip").string()});
    ProgramOutput out = run_program(argv, {"TMPDIR=" + dir.string()});
    result.log = out.text;
    if (out.status != 0) {
      if (result.log.empty()) result.log = "clang exited with status " + std::to_string(out.status);
      return result;
    }
    std::ifstream f(dir / "k.co", std::ios::binary);
    result.code.bytes.assign(std::istreambuf_iterator<char>(f), {});
    if (result.code.bytes.empty()) {
      result.log += "offline AMD compiler: clang wrote no code object";
      return result;
    }
    if (!req.name_expression.empty()) {
      const std::vector<std::string> symbols = amd_defined_symbols(result.code.bytes);
      result.code.symbol = kernel_for_probe(symbols);
      if (result.code.symbol.empty()) {
        std::string listed;
        for (const auto& sym : symbols) listed += "\n  " + demangle(sym);
        result.log += "offline AMD compiler: no kernel in the code object matches '" + req.name_expression +
                      "'; its symbols:" + listed;
        result.code = CodeObject{};
        return result;
      }
    }
    result.ok = true;
    return result;
  }
};

}  // namespace

const ClangToolchain& clang_toolchain() {
  static const ClangToolchain t = find_toolchain();
  return t;
}

std::string probe_source(const std::string& name_expression) {
  if (name_expression.empty()) return "";
  // `used` keeps the otherwise unreferenced variable through device linking; its mangled name
  // carries the instantiated kernel's.
  return std::string("template <auto F> __device__ __attribute__((used)) int ") + kProbe + " = 0;\n" +
         "template __device__ int " + kProbe + "<&" + name_expression + ">;\n";
}

std::string kernel_for_probe(const std::vector<std::string>& symbols) {
  const std::string probe_prefix = "_Z" + std::to_string(std::string(kProbe).size()) + kProbe;
  std::string probe;
  for (const auto& s : symbols)
    if (s.compare(0, probe_prefix.size(), probe_prefix) == 0) probe = demangle(s);
  if (probe.empty()) return "";
  // A kernel is a function symbol with a kernel descriptor beside it ("<name>.kd").
  std::string best, best_demangled;
  for (const auto& s : symbols) {
    if (s.find('.') != std::string::npos) continue;
    bool has_kd = false;
    for (const auto& k : symbols) has_kd = has_kd || k == s + ".kd";
    if (!has_kd) continue;
    const std::string d = demangle(s);
    // The demangler writes the address as "&(void k<1>(P))" or "&k(P)".
    const bool named = probe.find("&(" + d + ")") != std::string::npos || probe.find("&" + d + ">") != std::string::npos;
    if (named && d.size() > best_demangled.size()) best = s, best_demangled = d;
  }
  return best;
}

std::unique_ptr<Compiler> make_clang_compiler() { return std::make_unique<ClangCompiler>(); }

}  // namespace tiletune::gpu::hip
