// The handful of cuDNN's C API (the legacy convolution calls of cuDNN 8 and 9) that
// cudnn_conv.cpp loads with dlopen, declared here rather than taken from cudnn.h so that the
// build and CI never need cuDNN's headers: the machines that time against cuDNN often have it
// only inside a Python wheel (torch/lib, nvidia/cudnn/lib). Values and layouts are cuDNN 9's;
// where cudnn.h is present they are checked against it at compile time (cudnn_conv.cpp).
#pragma once
#include <dlfcn.h>

#include <map>
#include <string>

#include "common/error.h"
#include "gpu/backend.h"
#include "gpu/stream_buffers.h"
#include <cstddef>
#include <string>

namespace tiletune::gpu::cuda::cudnn {

using Handle = struct Opaque*;
using TensorDesc = struct OpaqueTensor*;
using FilterDesc = struct OpaqueFilter*;
using ConvDesc = struct OpaqueConv*;
using Status = int;  // cudnnStatus_t

constexpr Status kSuccess = 0;
enum DataType : int { kFloat = 0, kHalf = 2, kBfloat16 = 9 };  // cudnnDataType_t
enum Format : int { kNchw = 0, kNhwc = 1 };                    // cudnnTensorFormat_t
constexpr int kCrossCorrelation = 1;                           // cudnnConvolutionMode_t: no filter flip
enum MathType : int { kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3 };
constexpr int kFwdAlgoCount = 8, kBwdDataAlgoCount = 6, kBwdFilterAlgoCount = 7;

// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the three share this layout.
struct AlgoPerf {
  int algo;
  Status status;
  float time;  // ms
  std::size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  Status (*create)(Handle*);
  Status (*destroy)(Handle);
  const char* (*error_string)(Status);
  std::size_t (*version)();
  Status (*set_stream)(Handle, void* stream);
  Status (*create_tensor)(TensorDesc*);
  Status (*destroy_tensor)(TensorDesc);
  Status (*set_tensor_4d)(TensorDesc, int format, int type, int n, int c, int h, int w);
  Status (*create_filter)(FilterDesc*);
  Status (*destroy_filter)(FilterDesc);
  Status (*set_filter_4d)(FilterDesc, int type, int format, int k, int c, int r, int s);
  Status (*create_conv)(ConvDesc*);
  Status (*destroy_conv)(ConvDesc);
  Status (*set_conv_2d)(ConvDesc, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h, int dil_w, int mode,
                        int compute_type);
  Status (*set_group_count)(ConvDesc, int);
  Status (*set_math_type)(ConvDesc, int);
  Status (*find_fwd)(Handle, TensorDesc x_desc, const void* x, FilterDesc w_desc, const void* w, ConvDesc,
                     TensorDesc y_desc, void* y, int requested, int* returned, AlgoPerf*, void* ws, std::size_t ws_bytes);
  Status (*find_bwd_data)(Handle, FilterDesc w_desc, const void* w, TensorDesc dy_desc, const void* dy, ConvDesc,
                          TensorDesc dx_desc, void* dx, int requested, int* returned, AlgoPerf*, void* ws,
                          std::size_t ws_bytes);
  Status (*find_bwd_filter)(Handle, TensorDesc x_desc, const void* x, TensorDesc dy_desc, const void* dy, ConvDesc,
                            FilterDesc dw_desc, void* dw, int requested, int* returned, AlgoPerf*, void* ws,
                            std::size_t ws_bytes);
  Status (*fwd)(Handle, const void* alpha, TensorDesc, const void* x, FilterDesc, const void* w, ConvDesc, int algo,
                void* ws, std::size_t ws_bytes, const void* beta, TensorDesc, void* y);
  Status (*bwd_data)(Handle, const void* alpha, FilterDesc, const void* w, TensorDesc, const void* dy, ConvDesc,
                     int algo, void* ws, std::size_t ws_bytes, const void* beta, TensorDesc, void* dx);
  Status (*bwd_filter)(Handle, const void* alpha, TensorDesc, const void* x, TensorDesc, const void* dy, ConvDesc,
                       int algo, void* ws, std::size_t ws_bytes, const void* beta, FilterDesc, void* dw);
};

// cuDNN's library, opened once per process: TILETUNE_CUDNN_LIB if set (a path; nothing else is
// tried), else libcudnn.so.9, then libcudnn.so. nullptr if it cannot be loaded; `why` then says why.
void* library(std::string* why);

// The legacy API's entry points of library(); nullptr, with `why`, when it or one of them is missing.
const Api* api(std::string* why);

// Device scratch for cuDNN: the search's, as large as frameworks give cuDNN's find (1 GiB, less if
// memory is short), which also serves the default stream; one per other stream (StreamBuffers),
// grown to need, since kernels of two streams may run at once. Not thread-safe: the owner's lock guards it.
class Workspaces {
 public:
  explicit Workspaces(Device& dev) : dev_(dev) {}
  DeviceBuffer& search() {
    for (std::size_t bytes = std::size_t(1) << 30; !search_.get() && bytes >= (std::size_t(1) << 24); bytes /= 4) {
      try {
        search_ = DeviceBuffer(dev_, bytes);
      } catch (const Error&) {
      }
    }
    if (!search_.get()) throw Error("cannot allocate even 16 MiB of workspace for cuDNN");
    return search_;
  }
  void* for_stream(Stream stream, std::size_t bytes) {
    if (bytes == 0 || (!stream && bytes <= search().size())) return search().get();
    return by_stream_.get(dev_, stream, bytes).get();
  }

 private:
  Device& dev_;
  DeviceBuffer search_;
  StreamBuffers by_stream_;
};

}  // namespace tiletune::gpu::cuda::cudnn
