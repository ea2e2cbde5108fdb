#include "ops/launch.h"

#include "common/error.h"
#include "ops/arguments.h"
#include "ops/column_phases.h"
#include "ops/repack.h"

namespace tiletune::ops {

KernelLaunch::KernelLaunch(const KernelTemplate& t, Variables vars, const Problem& p)
    : tmpl_(&t), op_(&operation(p)), vars_(std::move(vars)), kernel_problem_(p) {
  dims_ = t.launch_dims(vars_);
  workspace_bytes_ = t.workspace_bytes(vars_);
  repack_ = op_->repack_plan(vars_, p);
  if (repack_) kernel_problem_ = repack_->kernel_problem;
  if (const auto r = vars_.find("REPACK"); r != vars_.end() && r->second == kRepackColumnPhases) {
    phases_ = tiletune::column_phases(p.gemm());
    if (!phases_->phases) throw Error(t.name() + ": REPACK 2 on " + p.key() + ", whose C is not cut into column phases");
    kernel_problem_ = phases_->kernel_problem;
  }
}

void KernelLaunch::launch(gpu::Device& dev, gpu::Kernel& kernel, CallParams params, void* workspace,
                          gpu::Stream stream, ArgumentCache* cache) const {
  params.set_workspace(workspace);
  // The copies go on the kernel's stream, into the end of its workspace, just before it.
  if (repack_) params.gemm = repack_operands(dev, *tmpl_, vars_, *repack_, params.gemm, stream);
  if (phases_) {
    void* scratch = workspace ? static_cast<char*>(workspace) + tmpl_->repack_offset(vars_) : nullptr;
    run_column_phases(dev, kernel_problem_.gemm(), *phases_, params.gemm, scratch, stream, [&](const TtGemmParams& g) {
      const std::vector<std::uint8_t> b = kernel_arguments(*tmpl_, CallParams(g), kernel_problem_, vars_);
      dev.launch(kernel, dims_, b.data(), b.size(), stream);
    });
    return;
  }
  if (tmpl_->arguments() == KernelTemplate::Arguments::Params) {  // the hot path: no allocation
    dev.launch(kernel, dims_, params.data(), params.size(), stream);
    return;
  }
  auto send = [&](const std::vector<std::uint8_t>& b) { dev.launch(kernel, dims_, b.data(), b.size(), stream); };
  auto encode = [&] { return op_->tma_arguments(*tmpl_, params, kernel_problem_, vars_); };
  if (cache) {
    cache->use(params, encode, send);
  } else {
    send(encode());
  }
}

}  // namespace tiletune::ops
