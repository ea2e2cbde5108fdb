// The arguments of the validator's device-side output check (check_output.cuh) and the partial
// result each of its thread blocks writes back; shared by the kernel and tuner/output_check.cpp.
// Only fundamental types: compiled by NVRTC, hipRTC and the host compiler alike.
//
// The output is `batch` blocks `stride` elements apart, each `cols` columns of `ld` elements of
// which the first `rows` hold values and the rest is padding; the fp64 reference holds
// rows x cols x batch values, packed. A flat tensor is rows = ld = stride = elements, cols = batch = 1.
#ifndef TILETUNE_CHECK_PARAMS_H
#define TILETUNE_CHECK_PARAMS_H

#define TT_CHECK_THREADS 256
#define TT_CHECK_NONE 0x7fffffffffffffffLL  // no bad element found

struct TtCheckParams {
  const void* out;        // the output as the kernel left it
  const double* ref;      // the fp64 reference
  void* partials;         // gridDim.x TtCheckPartial
  long long rows, cols, ld, stride, batch, elements;  // elements = (batch - 1) * stride + ld * cols
};

struct TtCheckPartial {
  double err;           // sum of (out - ref)^2 over the values that are finite
  double ref;           // sum of ref^2 over the same values
  long long first_bad;  // lowest index in the columns that is non-finite, or padding not left as 0xFF bytes
  long long first_gap;  // lowest index between batches not left as 0xFF bytes
};

// Copies `words` words (of the kernel's word type) from src to dst: restores an output's initial
// value from a device copy.
struct TtCopyParams {
  void* dst;
  const void* src;
  long long words;
};

#endif
