#include "vendors/vendor.h"

#include "common/error.h"

namespace tiletune::gpu {

Vendor::Vendor(Device& dev) : backend_(dev.info().backend), disabled_(vendor_disabled()) {
  if (disabled_) return;  // nothing loaded; vendor_scope refuses every problem
  gemm_ = make_vendor_gemm(dev, &gemm_missing_);
  conv_ = make_vendor_conv(dev, &conv_missing_);
}

Vendor::~Vendor() = default;

std::string Vendor::name(ProblemKind kind) const {
  if (kind == ProblemKind::Conv) return conv_ ? conv_->name() : "";
  return gemm_ ? gemm_->name() : "";
}

std::string Vendor::unsupported(const Problem& p) const {
  if (std::string why = vendor_scope(backend_, p, disabled_); !why.empty()) return why;
  if (p.is_conv()) return conv_ ? conv_->unsupported(p.conv()) : conv_missing_;
  return gemm_ ? gemm_->unsupported(p.gemm()) : gemm_missing_;
}

std::string Vendor::source(const Problem& p, const VendorChoice& choice) const {
  if (choice.empty()) return name(p.kind());
  if (p.is_conv()) return conv_ ? conv_->choice_source() : "";
  return gemm_ ? gemm_->choice_source() : "";
}

std::vector<VendorChoice> Vendor::alternatives(const Problem& p, const void* args, int limit) {
  if (limit <= 0 || !unsupported(p).empty()) return {};
  return visit(p, args, [&](auto& lib, const auto& problem, const auto& a) { return lib.alternatives(problem, a, limit); });
}

void Vendor::run(const Problem& p, const void* args, Stream stream, const VendorChoice& choice) {
  if (std::string why = unsupported(p); !why.empty()) throw Error(why);
  visit(p, args, [&](auto& lib, const auto& problem, const auto& a) { lib.run(problem, a, stream, choice); });
}

std::string Vendor::algorithm(const Problem& p) const {
  if (p.is_conv()) return conv_ ? conv_->algorithm(p.conv()) : "";
  return gemm_ ? gemm_->algorithm(p.gemm()) : "";
}

}  // namespace tiletune::gpu
