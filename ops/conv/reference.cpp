#include "ops/conv/reference.h"

#include <algorithm>
#include <thread>

#include "kernel_templates/conv_params.h"
#include "ops/elements.h"

namespace tiletune::ops {

std::vector<double> conv_reference(const ConvProblem& p, const std::vector<double>& first,
                                   const std::vector<double>& second) {
  const bool nchw = p.layout == ConvLayout::NCHW;
  const int N = int(p.n), C = int(p.c), H = int(p.h), W = int(p.w), K = int(p.k), R = int(p.r), S = int(p.s);
  const int P = int(p.p()), Q = int(p.q()), G = int(p.groups), Cg = C / G, Kg = K / G;
  const ConvDirection dir = p.direction;
  const std::vector<double>* x = dir == ConvDirection::BackwardData ? nullptr : &first;
  const std::vector<double>* wt = dir == ConvDirection::BackwardFilter ? nullptr : &second;
  const std::vector<double>* y = dir == ConvDirection::Forward ? nullptr
                                 : dir == ConvDirection::BackwardData ? &first : &second;
  std::vector<double> out(std::size_t(dir == ConvDirection::Forward        ? p.elements_y()
                                      : dir == ConvDirection::BackwardData ? p.elements_x()
                                                                           : p.elements_w()),
                          0.0);
  // Threads own disjoint parts of the output: images (fwd, dgrad) or output channels (wgrad).
  const int owners = dir == ConvDirection::BackwardFilter ? K : N;
  const int threads = int(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, unsigned(owners)));
  auto work = [&](int t) {
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        if ((dir == ConvDirection::BackwardFilter ? k : n) % threads != t) continue;
        const int g = k / Kg;
        for (int op = 0; op < P; ++op)
          for (int oq = 0; oq < Q; ++oq) {
            const long long yi = tt_act_offset(nchw, n, k, op, oq, K, P, Q);
            for (int r = 0; r < R; ++r) {
              const int ih = op * int(p.stride_h) - int(p.pad_h) + r * int(p.dil_h);
              if (ih < 0 || ih >= H) continue;
              for (int s = 0; s < S; ++s) {
                const int iw = oq * int(p.stride_w) - int(p.pad_w) + s * int(p.dil_w);
                if (iw < 0 || iw >= W) continue;
                for (int c = 0; c < Cg; ++c) {
                  const long long xi = tt_act_offset(nchw, n, g * Cg + c, ih, iw, C, H, W);
                  const long long wi = tt_filter_offset(nchw, k, c, r, s, Cg, R, S);
                  switch (dir) {
                    case ConvDirection::Forward: out[yi] += (*x)[xi] * (*wt)[wi]; break;
                    case ConvDirection::BackwardData: out[xi] += (*y)[yi] * (*wt)[wi]; break;
                    case ConvDirection::BackwardFilter: out[wi] += (*x)[xi] * (*y)[yi]; break;
                  }
                }
              }
            }
          }
      }
  };
  run_on_threads(unsigned(threads), work);
  return out;
}

}  // namespace tiletune::ops
