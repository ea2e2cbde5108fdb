// What the CUDA test files share: a spread of simt_gemm candidates, and the fixture of the tests
// that launch kernels (they skip cleanly where no CUDA device is present and run on the H200).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/backend.h"
#include "solutions/kernel_template.h"
#include "tuner/enumerator.h"

namespace tiletune::testing {

// A spread of each problem's surviving candidates: every stride-th one, plus the template default.
inline std::vector<tuner::Candidate> sample(const std::vector<GemmProblem>& problems, const gpu::DeviceInfo& dev,
                                            std::size_t per_problem) {
  auto e = tuner::enumerate({find_template("simt_gemm")}, problems, dev);
  std::vector<tuner::Candidate> out;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    std::vector<tuner::Candidate> mine;
    for (const auto& c : e.candidates)
      if (c.problem_index == pi) mine.push_back(c);
    std::size_t stride = std::max<std::size_t>(1, mine.size() / per_problem);
    for (std::size_t i = 0; i < mine.size(); i += stride) out.push_back(mine[i]);
  }
  return out;
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::list_devices(gpu::BackendKind::Cuda).empty()) GTEST_SKIP() << "no CUDA device";
    dev_ = gpu::open_device(gpu::BackendKind::Cuda, 0);
  }
  std::unique_ptr<gpu::Device> dev_;
};

}  // namespace tiletune::testing
