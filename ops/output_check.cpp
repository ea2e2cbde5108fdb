#include "ops/output_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "kernel_templates/check_params.h"
#include "ops/elements.h"
#include "ops/gemm/inputs.h"

namespace tiletune::ops {
namespace {

bool poisoned(const std::uint8_t* out, std::int64_t idx, int eb) {
  for (int k = 0; k < eb; ++k)
    if (out[idx * eb + k] != 0xFF) return false;
  return true;
}

// Compiled once per process and arch: a worker prepares many problems, and an NVRTC compile of
// even this small kernel costs about as much as making a mid-sized problem's data.
std::shared_ptr<gpu::Kernel> compile_and_load(gpu::Device& dev, const gpu::CompileRequest& req) {
  static std::mutex mu;
  static std::map<std::string, gpu::CompileResult> done;
  const std::string key = req.arch + "|" + req.name_expression;
  gpu::CompileResult r;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = done.find(key);
    if (it != done.end()) r = it->second;
  }
  if (!r.ok) {
    r = dev.compiler().compile(req);
    if (!r.ok) throw Error("compiling " + req.name_expression + " (check_output.cuh) failed: " + r.log);
    std::lock_guard<std::mutex> lock(mu);
    done.emplace(key, r);
  }
  return dev.load(r.code);
}

}  // namespace

OutputLayout OutputLayout::flat(DataType type, std::int64_t elements) {
  OutputLayout l;
  l.type = type;
  l.rows = l.ld = l.stride = elements;
  return l;
}

OutputLayout OutputLayout::of_c(const GemmProblem& p) {
  OutputLayout l;
  l.type = p.c_type;
  l.rows = p.m, l.cols = p.n, l.ld = p.ldc, l.batch = p.batch;
  l.stride = p.batch > 1 ? p.stride_c : p.ldc * p.n;
  return l;
}

double Comparison::rel_error() const { return std::sqrt(err / std::max(ref, 1e-300)); }

ValidationResult judge_error(const Comparison& c, double tolerance) {
  ValidationResult r;
  r.rel_error = c.rel_error();
  r.ok = r.rel_error <= tolerance;
  if (!r.ok) r.reason = "relative error " + std::to_string(r.rel_error) + " > tolerance " + std::to_string(tolerance);
  return r;
}

double read_element(gpu::Device& dev, const void* buffer, std::int64_t index, DataType type) {
  std::uint8_t bytes[8];
  const int eb = size_of(type);
  dev.copy_to_host(bytes, static_cast<const std::uint8_t*>(buffer) + index * eb, std::size_t(eb));
  return load_element(bytes, 0, type);
}

Comparison compare_output(const OutputLayout& l, const std::uint8_t* out, const double* reference) {
  const int eb = size_of(l.type);
  // Columns are checked in parallel (a large C has 10^8 elements); each worker keeps its sums and
  // stops at its first bad column, so the lowest bad column of all is found.
  const std::int64_t columns = l.batch * l.cols;
  unsigned threads = unsigned(std::clamp<std::int64_t>(columns / 64, 1, std::max(1u, std::thread::hardware_concurrency())));
  struct Part {
    double err = 0, ref = 0;
    std::int64_t bad = -1;
  };
  std::vector<Part> parts(threads);
  auto work = [&](unsigned t) {
    Part& part = parts[t];
    for (std::int64_t col = t; col < columns && part.bad < 0; col += threads) {
      const std::int64_t b = col / l.cols, j = col % l.cols;
      for (std::int64_t i = 0; i < l.ld; ++i) {
        const std::int64_t idx = b * l.stride + j * l.ld + i;
        if (i >= l.rows) {  // padding: must be left exactly as it was
          if (!poisoned(out, idx, eb)) {
            part.bad = idx;
            break;
          }
          continue;
        }
        const double v = load_element(out, idx, l.type);
        const double want = reference[std::size_t((b * l.cols + j) * l.rows + i)];
        if (!std::isfinite(v)) {
          part.bad = idx;
          break;
        }
        part.err += (v - want) * (v - want);
        part.ref += want * want;
      }
    }
  };
  run_on_threads(threads, work);
  Comparison c;
  for (const Part& part : parts) {
    c.err += part.err;
    c.ref += part.ref;
    if (part.bad >= 0 && (c.first_bad < 0 || part.bad < c.first_bad)) c.first_bad = part.bad;
  }
  // Gaps between batches (stride > ld * cols) must be untouched as well.
  for (std::int64_t b = 0; b + 1 < l.batch && c.first_gap < 0; ++b)
    for (std::int64_t idx = b * l.stride + l.ld * l.cols; idx < (b + 1) * l.stride; ++idx)
      if (!poisoned(out, idx, eb)) {
        c.first_gap = idx;
        break;
      }
  return c;
}

gpu::CompileRequest check_output_request(const gpu::DeviceInfo& dev, DataType type) {
  return reference_kernel_request(dev, "check_output.cuh", std::string("check_output<") + device_type_name(type) + ">");
}

gpu::CompileRequest copy_words_request(const gpu::DeviceInfo& dev, int word_bytes) {
  return reference_kernel_request(dev, "check_output.cuh",
                                  word_bytes == 4 ? "copy_words<unsigned int>" : "copy_words<unsigned short>");
}

DeviceCheck::DeviceCheck(gpu::Device& dev, const OutputLayout& layout, const std::vector<double>& reference)
    : DeviceCheck(dev, layout, [&] {
        gpu::DeviceBuffer buf(dev, std::max<std::size_t>(1, reference.size()) * sizeof(double));
        dev.copy_to_device(buf.get(), reference.data(), reference.size() * sizeof(double));
        return buf;
      }()) {}

DeviceCheck::DeviceCheck(gpu::Device& dev, const OutputLayout& layout, gpu::DeviceBuffer reference)
    : dev_(dev), layout_(layout), reference_(std::move(reference)) {
  if (reference_.size() < std::size_t(layout.rows * layout.cols * layout.batch) * sizeof(double))
    throw Error("DeviceCheck: the reference is smaller than the output's values");
  kernel_ = compile_and_load(dev, check_output_request(dev.info(), layout.type));
  // A fixed grid per problem: the same summation order on every call.
  blocks_ = unsigned(std::clamp<std::int64_t>((layout.elements() + TT_CHECK_THREADS - 1) / TT_CHECK_THREADS, 1, 1024));
  partials_ = gpu::DeviceBuffer(dev, blocks_ * sizeof(TtCheckPartial));
}

Comparison DeviceCheck::compare(const void* out) {
  TtCheckParams args{};
  args.out = out;
  args.ref = static_cast<const double*>(reference_.get());
  args.partials = partials_.get();
  args.rows = layout_.rows, args.cols = layout_.cols, args.ld = layout_.ld, args.stride = layout_.stride;
  args.batch = layout_.batch, args.elements = layout_.elements();
  gpu::LaunchDims dims;
  dims.block[0] = TT_CHECK_THREADS;
  dims.grid[0] = blocks_;
  dev_.launch(*kernel_, dims, &args, sizeof args);
  std::vector<TtCheckPartial> parts(blocks_);
  dev_.copy_to_host(parts.data(), partials_.get(), parts.size() * sizeof(TtCheckPartial));  // waits for the kernel
  Comparison c;
  std::int64_t bad = TT_CHECK_NONE, gap = TT_CHECK_NONE;
  for (const TtCheckPartial& part : parts) {
    c.err += part.err;
    c.ref += part.ref;
    bad = std::min<std::int64_t>(bad, part.first_bad);
    gap = std::min<std::int64_t>(gap, part.first_gap);
  }
  c.first_bad = bad == TT_CHECK_NONE ? -1 : bad;
  c.first_gap = gap == TT_CHECK_NONE ? -1 : gap;
  return c;
}

DeviceSnapshot::DeviceSnapshot(gpu::Device& dev, const std::vector<std::uint8_t>& bytes)
    : dev_(dev), copy_(dev, std::max<std::size_t>(1, bytes.size())), word_bytes_(bytes.size() % 4 == 0 ? 4 : 2) {
  if (bytes.size() % 2 != 0) throw Error("DeviceSnapshot: an odd number of bytes");
  dev.copy_to_device(copy_.get(), bytes.data(), bytes.size());
  kernel_ = compile_and_load(dev, copy_words_request(dev.info(), word_bytes_));
  bytes_ = bytes.size();
}

void DeviceSnapshot::restore(void* dst) {
  TtCopyParams args{};
  args.dst = dst;
  args.src = copy_.get();
  args.words = static_cast<long long>(bytes_ / std::size_t(word_bytes_));
  gpu::LaunchDims dims;
  dims.block[0] = 256;
  dims.grid[0] = unsigned(std::clamp<long long>((args.words + 255) / 256, 1, 4096));
  dev_.launch(*kernel_, dims, &args, sizeof args);
}

}  // namespace tiletune::ops
