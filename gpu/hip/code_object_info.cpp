#include "gpu/hip/code_object_info.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/error.h"
#include "common/process.h"

namespace tiletune::gpu::hip {
namespace {

constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";  // 24 bytes, no terminator in files
constexpr std::size_t kBundleMagicLen = sizeof(kBundleMagic) - 1;

bool is_elf(const std::uint8_t* p, std::size_t n) {
  return n >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F';
}

std::uint64_t read_u64le(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string which(const std::string& name) {
  std::string hit = find_program(name);
  return !hit.empty() && ::access(hit.c_str(), X_OK) == 0 ? hit : "";
}

// First available of: $<env_var>, then `names` on $PATH. Throws Error naming all of them.
std::string find_tool(const char* env_var, const std::vector<std::string>& names) {
  if (const char* over = std::getenv(env_var); over && *over) {
    std::string hit = which(over);
    if (hit.empty())
      throw Error(std::string(env_var) + "=" + over + " is not an executable (found neither on PATH nor as a path)");
    return hit;
  }
  std::string tried;
  for (const auto& n : names) {
    std::string hit = which(n);
    if (!hit.empty()) return hit;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  throw Error("LLVM tool not found on PATH (tried " + tried + "; set " + env_var +
              " to override); install llvm-22 to inspect AMDGPU code objects (llvm-14 reads gfx90a and older only)");
}

// Runs argv[0] (a full path) without a shell, capturing stdout+stderr.
ProgramOutput run_tool(const std::vector<std::string>& argv) { return run_program(argv); }

// The code object in a private temporary file, removed again on scope exit.
class TempFile {
 public:
  explicit TempFile(const std::vector<std::uint8_t>& bytes) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tiletune-amdgpu-XXXXXX";
    std::vector<char> name(templ.begin(), templ.end());
    name.push_back('\0');
    int fd = ::mkstemp(name.data());
    if (fd < 0) throw Error("cannot create a temporary file " + templ + ": " + std::strerror(errno));
    path_ = name.data();
    std::size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        ::unlink(path_.c_str());
        throw Error("cannot write the code object to " + path_ + ": " + std::strerror(err));
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string unquote(std::string v) {
  v = trim(v);
  if (v.size() >= 2 && ((v.front() == '\'' && v.back() == '\'') || (v.front() == '"' && v.back() == '"')))
    v = v.substr(1, v.size() - 2);
  return v;
}

int to_int(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    long long v = std::stoll(value, &used, 10);
    if (used != value.size()) throw std::invalid_argument("trailing characters");
    return static_cast<int>(v);
  } catch (const std::exception&) {
    throw Error("AMDGPU metadata: bad value '" + value + "' for " + key);
  }
}

// Parses the YAML that llvm-readelf prints for NT_AMDGPU_METADATA notes (code object v3+). Only
// the keys directly on each element of `amdhsa.kernels` are read; nested ones (.args[].name, ...)
// are recognised by their deeper indentation and skipped.
std::vector<AmdKernelInfo> parse_notes(const std::string& text) {
  std::vector<AmdKernelInfo> kernels;
  std::istringstream in(text);
  std::string line;
  bool in_kernels = false;
  std::size_t key_col = std::string::npos;  // column of the '.' of kernel-level keys
  AmdKernelInfo* cur = nullptr;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (line.compare(first, 15, "amdhsa.kernels:") == 0) {
      in_kernels = true;
      key_col = std::string::npos;
      cur = nullptr;
      continue;
    }
    if (!in_kernels) continue;
    // Kernel list ends at the next key at the indentation of `amdhsa.kernels:` (or a doc end).
    if (line[first] != '-' && line[first] != '.') {
      in_kernels = false;
      cur = nullptr;
      continue;
    }
    std::size_t dot;
    if (line[first] == '-') {
      dot = line.find_first_not_of(' ', first + 1);
      if (dot == std::string::npos || line[dot] != '.') continue;
      if (key_col == std::string::npos) key_col = dot;
      if (dot == key_col) {  // a new kernel entry
        kernels.emplace_back();
        kernels.back().vgpr_count = kernels.back().sgpr_count = kernels.back().lds_bytes = -1;
        cur = &kernels.back();
      } else {
        continue;  // an element of a nested list (.args)
      }
    } else {
      dot = first;
      if (dot != key_col) continue;
    }
    if (!cur) continue;
    std::size_t colon = line.find(':', dot);
    if (colon == std::string::npos) continue;
    std::string key = line.substr(dot, colon - dot);
    std::string value = unquote(line.substr(colon + 1));
    if (key == ".name") cur->name = value;
    else if (key == ".vgpr_count") cur->vgpr_count = to_int(key, value);
    else if (key == ".sgpr_count") cur->sgpr_count = to_int(key, value);
    else if (key == ".group_segment_fixed_size") cur->lds_bytes = to_int(key, value);
    else if (key == ".agpr_count") cur->agpr_count = to_int(key, value);
    else if (key == ".vgpr_spill_count") cur->vgpr_spill_count = to_int(key, value);
    else if (key == ".sgpr_spill_count") cur->sgpr_spill_count = to_int(key, value);
    else if (key == ".private_segment_fixed_size") cur->private_bytes = to_int(key, value);
    else if (key == ".wavefront_size") cur->wavefront_size = to_int(key, value);
    else if (key == ".max_flat_workgroup_size") cur->max_workgroup_size = to_int(key, value);
  }
  for (const auto& k : kernels) {
    if (k.name.empty() || k.vgpr_count < 0 || k.sgpr_count < 0 || k.lds_bytes < 0)
      throw Error("AMDGPU metadata: a kernel entry lacks .name, .vgpr_count, .sgpr_count or "
                  ".group_segment_fixed_size (kernel '" + k.name + "')");
  }
  return kernels;
}

bool safe_arch(const std::string& arch) {
  if (arch.empty() || arch.size() > 64) return false;
  for (char c : arch)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '+' || c == '-' || c == '_'))
      return false;
  return true;
}

}  // namespace

std::vector<std::uint8_t> extract_amd_elf(const std::vector<std::uint8_t>& bytes) {
  const std::uint8_t* p = bytes.data();
  const std::size_t n = bytes.size();
  if (is_elf(p, n)) return bytes;
  if (n >= kBundleMagicLen && std::memcmp(p, kBundleMagic, kBundleMagicLen) == 0) {
    // Layout: magic, u64 entry count, then per entry: u64 offset, u64 size, u64 id length, id.
    std::size_t pos = kBundleMagicLen;
    auto need = [&](std::size_t k) {
      if (pos + k > n) throw Error("truncated clang offload bundle (" + std::to_string(n) + " bytes)");
    };
    need(8);
    std::uint64_t count = read_u64le(p + pos);
    pos += 8;
    std::string ids;
    for (std::uint64_t i = 0; i < count; ++i) {
      need(24);
      std::uint64_t off = read_u64le(p + pos), size = read_u64le(p + pos + 8), idlen = read_u64le(p + pos + 16);
      pos += 24;
      need(idlen);
      std::string id(reinterpret_cast<const char*>(p + pos), idlen);
      pos += idlen;
      ids += (ids.empty() ? "" : ", ") + id;
      if (off > n || size > n - off) throw Error("clang offload bundle entry '" + id + "' lies outside the bundle");
      if (id.find("amdgcn") != std::string::npos && is_elf(p + off, size))
        return std::vector<std::uint8_t>(p + off, p + off + size);
    }
    throw Error("clang offload bundle holds no amdgcn ELF (entries: " + (ids.empty() ? "none" : ids) + ")");
  }
  if (n >= 4 && std::memcmp(p, "CCOB", 4) == 0)
    throw Error("compressed clang offload bundle (CCOB) is not supported; compile without compression");
  // Unknown wrapper: take the first embedded ELF.
  for (std::size_t i = 1; i + 4 <= n; ++i)
    if (is_elf(p + i, n - i)) return std::vector<std::uint8_t>(p + i, p + n);
  throw Error("not an AMDGPU code object: no ELF header in " + std::to_string(n) + " bytes");
}

std::vector<AmdKernelInfo> read_amd_code_object(const std::vector<std::uint8_t>& bytes) {
  const std::string tool = find_tool("TILETUNE_LLVM_READELF", {"llvm-readelf-22", "llvm-readelf-14", "llvm-readelf"});
  TempFile file(extract_amd_elf(bytes));
  ProgramOutput out = run_tool({tool, "--notes", file.path()});
  if (out.status != 0)
    throw Error(tool + " --notes failed (status " + std::to_string(out.status) + "): " + out.text);
  if (out.text.find("amdhsa.kernels") == std::string::npos)
    throw Error("no AMDGPU metadata (amdhsa.kernels) in the code object's notes; " + tool + " printed:\n" + out.text);
  return parse_notes(out.text);
}

std::string disassemble_amd(const std::vector<std::uint8_t>& bytes, const std::string& arch) {
  if (!safe_arch(arch)) throw Error("invalid AMDGPU arch name for disassembly: '" + arch + "'");
  const std::string tool = find_tool("TILETUNE_LLVM_OBJDUMP", {"llvm-objdump-22", "llvm-objdump-14", "llvm-objdump"});
  TempFile file(extract_amd_elf(bytes));
  ProgramOutput out = run_tool({tool, "-d", "--mcpu=" + arch, file.path()});
  if (out.status != 0)
    throw Error(tool + " -d --mcpu=" + arch + " failed (status " + std::to_string(out.status) + "): " + out.text);
  return out.text;
}

std::vector<std::string> amd_defined_symbols(const std::vector<std::uint8_t>& bytes) {
  const std::string tool = find_tool("TILETUNE_LLVM_NM", {"llvm-nm-22", "llvm-nm-14", "llvm-nm"});
  TempFile file(extract_amd_elf(bytes));
  ProgramOutput out = run_tool({tool, "--defined-only", "--format=just-symbols", file.path()});
  if (out.status != 0)
    throw Error(tool + " --defined-only failed (status " + std::to_string(out.status) + "): " + out.text);
  std::vector<std::string> names;
  std::istringstream in(out.text);
  for (std::string line; std::getline(in, line);)
    if (!(line = trim(line)).empty()) names.push_back(line);
  return names;
}

}  // namespace tiletune::gpu::hip
