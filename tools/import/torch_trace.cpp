// PyTorch profiler traces: torch.profiler.profile(record_shapes=True) ... prof.export_chrome_trace()
// (torch.profiler documentation) writes Chrome trace JSON, {"traceEvents": [...]}, where each
// operator call is a complete event ("ph": "X", ts and dur in microseconds, pid and tid) with its
// arguments' shapes, e.g.
//   {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": 120.5, "dur": 30.1,
//    "args": {"Input Dims": [[160], [96, 64], [64, 160], [], []],
//             "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"],
//             "Input Strides": [[1], [64, 1], [1, 64], [], []],
//             "Concrete Inputs": ["", "", "", "1", "1"]}}
// ("Input Strides" and "Concrete Inputs" in recent PyTorch only; without them tensors are taken as
// contiguous and convolutions as stride 1, padding 0, dilation 1, which the report notes.)
//
// The GEMMs are those tiletune.torch serves: aten::mm, addmm, bmm, baddbmm. aten::linear and
// aten::matmul become those ops, nested inside them in time on the same thread, and are counted
// only where no such op is nested (a trace that recorded the outer op alone). Convolutions are the
// outermost of aten::convolution, _convolution and cudnn_convolution (one call, however deep its
// dispatch), and aten::convolution_backward (an input and a weight gradient, as its output_mask asks).
//
// The mapping: PyTorch tensors are row-major, tiletune is column-major BLAS. out = a @ b with
// a (M x K), b (K x N) is, column-major, out^T (N x M) = b^T a^T; so tiletune's A is b, its B is a,
// m = N, n = M, k = K, and an operand is "N" where its tensor is row-major (its storage is the
// transpose, ld its row stride) and "T" where it is column-major (ld its column stride), as
// tiletune.torch does when it serves the call (python/tiletune/torch.py, _gemm and _operand).
// E.g. nn.Linear(64, 160, bias=False) on x (96 x 64): mm(x, W.t()), W.t() (64 x 160) strides
// [1, 64] is column-major: transA T, lda 64, m 160; x row-major: transB N, ldb 64, n 96; k 64.
#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "solutions/json_fields.h"
#include "tools/import/formats.h"

namespace tiletune::imports {
namespace {

using nlohmann::json;

[[noreturn]] void unsupported(const std::string& why) { throw Skip{SkipKind::Unsupported, why}; }
[[noreturn]] void unparseable(const std::string& why) { throw Skip{SkipKind::Unparseable, why}; }

enum class OpKind { Gemm, GemmCaller, Conv, ConvBackward, Other };

OpKind kind_of(const std::string& name) {
  if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm") return OpKind::Gemm;
  if (name == "aten::linear" || name == "aten::matmul") return OpKind::GemmCaller;
  if (name == "aten::convolution" || name == "aten::_convolution" || name == "aten::cudnn_convolution") return OpKind::Conv;
  if (name == "aten::convolution_backward") return OpKind::ConvBackward;
  return OpKind::Other;
}

// An argument of an operator event: a tensor's sizes, strides (contiguous where not recorded) and
// type, or nothing (a scalar, None).
struct Tensor {
  std::vector<std::int64_t> dims, strides;
  std::string type;
  bool present = false;
  std::int64_t dim(int i) const { return dims[i < 0 ? dims.size() + i : i]; }
  std::int64_t stride(int i) const { return strides[i < 0 ? strides.size() + i : i]; }
};

class Args {
 public:
  Args(const json& args, Sink& sink) : args_(args), sink_(sink) {
    if (!args.is_object() || !args.contains("Input Dims") || !args["Input Dims"].is_array())
      unparseable("no \"Input Dims\" (profile with record_shapes=True)");
  }

  Tensor tensor(std::size_t i, const char* what) const {
    const json& dims = args_["Input Dims"];
    Tensor t;
    if (i >= dims.size() || !dims[i].is_array() || dims[i].empty()) return t;
    t.present = true;
    for (const json& d : dims[i]) t.dims.push_back(json_integer(d, std::string(what) + "'s sizes"));
    const json* strides = field("Input Strides", i);
    if (strides && strides->is_array() && strides->size() == t.dims.size()) {
      for (const json& s : *strides) t.strides.push_back(json_integer(s, std::string(what) + "'s strides"));
    } else {
      sink_.note("tensors without recorded strides taken as contiguous");
      t.strides.assign(t.dims.size(), 1);
      for (std::size_t d = t.dims.size(); d-- > 1;) t.strides[d - 1] = t.strides[d] * t.dims[d];
    }
    const json* type = field("Input type", i);
    t.type = type && type->is_string() ? type->get<std::string>() : "";
    return t;
  }

  // A scalar or list argument as PyTorch recorded it ("1", "[2, 2]", "False"); "" when it did not.
  std::string concrete(std::size_t i) const {
    const json* c = field("Concrete Inputs", i);
    return c && c->is_string() ? c->get<std::string>() : "";
  }

 private:
  const json* field(const char* name, std::size_t i) const {
    if (!args_.contains(name) || !args_[name].is_array() || i >= args_[name].size()) return nullptr;
    return &args_[name][i];
  }
  const json& args_;
  Sink& sink_;
};

DataType dtype(const std::string& t) {
  if (t == "float") return DataType::F32;
  if (t == "c10::Half") return DataType::F16;
  if (t == "c10::BFloat16") return DataType::BF16;
  unsupported("dtype " + (t.empty() ? std::string("(not recorded)") : t));
}

DataType common_dtype(const std::vector<const Tensor*>& ts) {
  const DataType d = dtype(ts[0]->type);
  for (const Tensor* t : ts)
    if (t->type != ts[0]->type) unsupported("operands of dtypes " + ts[0]->type + " and " + t->type);
  return d;
}

// How the last two dims of a row-major tensor (rows x cols) lie as a column-major matrix: "N" when
// its storage is the tensor's transpose (row-major, ld the row stride), "T" when it is the tensor
// itself (column-major, ld the column stride); tiletune.torch's rule, so that the keys agree.
std::pair<bool, std::int64_t> operand(const Tensor& t) {
  const std::int64_t rows = t.dim(-2), cols = t.dim(-1), s0 = t.stride(-2), s1 = t.stride(-1);
  if (cols == 1 || s1 == 1) {
    const std::int64_t ld = rows > 1 ? s0 : cols;
    if (ld >= std::max<std::int64_t>(1, cols)) return {false, ld};
  }
  if (rows == 1 || s0 == 1) {
    const std::int64_t ld = cols > 1 ? s1 : rows;
    if (ld >= std::max<std::int64_t>(1, rows)) return {true, ld};
  }
  unsupported("an operand with strides [" + std::to_string(s0) + ", " + std::to_string(s1) + "] (neither row- nor column-major)");
}

// out = a @ b (+ beta * bias) of row-major tensors a (.., M, K), b (.., K, N), at most one batch dim.
GemmProblem torch_gemm(const Tensor& a, const Tensor& b, bool batched, bool beta_zero, const ImportOptions& o) {
  const std::size_t rank = batched ? 3 : 2;
  if (!a.present || !b.present || a.dims.size() != rank || b.dims.size() != rank || a.dim(-1) != b.dim(-2) ||
      (batched && a.dim(0) != b.dim(0)))
    unparseable("operands that do not multiply as " + std::string(batched ? "bmm" : "mm"));
  GemmProblem p;
  p.a_type = p.c_type = common_dtype({&a, &b});
  p.compute_tf32 = o.tf32 && p.a_type == DataType::F32;
  p.m = b.dim(-1);
  p.n = a.dim(-2);
  p.k = a.dim(-1);
  std::tie(p.trans_a, p.lda) = operand(b);
  std::tie(p.trans_b, p.ldb) = operand(a);
  p.beta_zero = beta_zero;
  p.batch = batched ? a.dim(0) : 1;
  if (p.batch > 1) {
    p.stride_a = b.stride(0);
    p.stride_b = a.stride(0);
    if (p.stride_a == 0 || p.stride_b == 0) unsupported("a broadcast operand (batch stride 0)");
  }
  return p;  // C packed: the op makes a new tensor
}

bool beta_is_zero(const Args& args, std::size_t i) {
  const std::string beta = args.concrete(i);
  return !beta.empty() && parse_number(beta, "beta") == 0;  // not recorded: the default, 1
}

// nn.Linear's x @ W^T (+ bias) on x (..., K) folded to M rows, as aten::linear runs it.
GemmProblem linear(const Args& args, const ImportOptions& o) {
  Tensor x = args.tensor(0, "input"), w = args.tensor(1, "weight");
  if (!x.present || !w.present || w.dims.size() != 2) unparseable("linear without an input and a 2-d weight");
  for (std::size_t d = 0; d + 2 < x.dims.size(); ++d)
    if (x.strides[d] != x.strides[d + 1] * x.dims[d + 1]) unsupported("a linear input whose batch dims do not fold");
  Tensor a = x;
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < x.dims.size(); ++d) rows *= x.dims[d];
  a.dims = {rows, x.dim(-1)};
  a.strides = {x.dims.size() > 1 ? x.stride(-2) : x.dim(-1), x.stride(-1)};
  Tensor b = w;  // W^T
  b.dims = {w.dim(1), w.dim(0)};
  b.strides = {w.stride(1), w.stride(0)};
  return torch_gemm(a, b, false, !args.tensor(2, "bias").present, o);
}

std::vector<Problem> read_gemm(const std::string& name, const Args& args, const ImportOptions& o) {
  if (name == "aten::mm") return {torch_gemm(args.tensor(0, "self"), args.tensor(1, "mat2"), false, true, o)};
  if (name == "aten::bmm") return {torch_gemm(args.tensor(0, "self"), args.tensor(1, "mat2"), true, true, o)};
  if (name == "aten::addmm")
    return {torch_gemm(args.tensor(1, "mat1"), args.tensor(2, "mat2"), false, beta_is_zero(args, 3), o)};
  if (name == "aten::baddbmm")
    return {torch_gemm(args.tensor(1, "batch1"), args.tensor(2, "batch2"), true, beta_is_zero(args, 3), o)};
  if (name == "aten::linear") return {linear(args, o)};
  const Tensor a = args.tensor(0, "self"), b = args.tensor(1, "other");  // aten::matmul
  if (a.dims.size() == 2 && b.dims.size() == 2) return {torch_gemm(a, b, false, true, o)};
  if (a.dims.size() == 3 && b.dims.size() == 3) return {torch_gemm(a, b, true, true, o)};
  unsupported("aten::matmul of " + std::to_string(a.dims.size()) + "-d and " + std::to_string(b.dims.size()) +
              "-d tensors with no mm or bmm inside it");
}

// ---- convolutions ------------------------------------------------------------------------------

// A list argument as PyTorch records it, "[2, 2]" or "[True, False, True]", or a lone "3", as items.
std::vector<std::string> list_items(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '[' || c == ']' || c == ' '; }), s.end());
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    items.push_back(s.substr(start, comma - start));
  items.push_back(s.substr(start));
  return items;
}

// An int-list argument of a 2-d convolution as (h, w); `fallback` for both where not recorded.
std::pair<std::int64_t, std::int64_t> pair_arg(const Args& args, std::size_t i, const char* what, std::int64_t fallback,
                                               Sink& sink) {
  const std::string s = args.concrete(i);
  if (s.empty()) {
    sink.note(std::string("convolutions without a recorded ") + what + " (" + std::to_string(fallback) + " assumed)");
    return {fallback, fallback};
  }
  const std::vector<std::string> items = list_items(s);
  if (items.size() > 2) unsupported(std::string(what) + " " + s + ": not a 2-d convolution");
  return {parse_int(items.front(), what), parse_int(items.back(), what)};
}

// Dense in the order `inner_first` of its dims (NCHW: W, H, C, N; NHWC: C, W, H, N)? Dims of
// size 1 have no say.
bool dense(const Tensor& t, std::initializer_list<int> inner_first) {
  std::int64_t expected = 1;
  for (int d : inner_first) {
    if (t.dims[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.dims[d];
  }
  return true;
}

// NHWC where the tensors are channels_last, NCHW where contiguous: the first tensor that tells the
// two apart decides, and every tensor must be dense in it (tiletune.torch's rule, _conv_layout).
ConvLayout conv_layout(const std::vector<const Tensor*>& ts) {
  std::optional<ConvLayout> layout;
  for (const Tensor* t : ts) {
    const bool c = dense(*t, {3, 2, 1, 0}), cl = dense(*t, {1, 3, 2, 0});
    if (c != cl) {
      layout = cl ? ConvLayout::NHWC : ConvLayout::NCHW;
      break;
    }
  }
  const ConvLayout l = layout.value_or(ConvLayout::NCHW);
  for (const Tensor* t : ts)
    if (!(l == ConvLayout::NHWC ? dense(*t, {1, 3, 2, 0}) : dense(*t, {3, 2, 1, 0})))
      unsupported("convolution tensors neither all contiguous nor all channels_last");
  return l;
}

// Where an op keeps which argument.
struct ConvSignature {
  std::size_t dy, x, w, stride, pad, dil, transposed, groups, mask;  // kNone where it has none
};
constexpr std::size_t kNone = ~std::size_t(0);

ConvSignature conv_signature(const std::string& name) {
  if (name == "aten::cudnn_convolution")  // (self, weight, padding, stride, dilation, groups, ...)
    return {kNone, 0, 1, 3, 2, 4, kNone, 5, kNone};
  if (name == "aten::convolution_backward")  // (grad_output, input, weight, bias_sizes, stride, ...)
    return {0, 1, 2, 4, 5, 6, 7, 9, 10};
  return {kNone, 0, 1, 3, 4, 5, 6, 8, kNone};  // (input, weight, bias, stride, padding, dilation, transposed, ...)
}

std::vector<Problem> read_conv(const std::string& name, const Args& args, Sink& sink) {
  const ConvSignature sig = conv_signature(name);
  const Tensor x = args.tensor(sig.x, "input"), w = args.tensor(sig.w, "weight");
  const Tensor dy = sig.dy == kNone ? Tensor{} : args.tensor(sig.dy, "grad_output");
  if (!x.present || !w.present || (sig.dy != kNone && !dy.present)) unparseable("a convolution without its tensors");
  if (x.dims.size() != 4 || w.dims.size() != 4 || (dy.present && dy.dims.size() != 4))
    unsupported(std::to_string(x.dims.size() - 2) + "-d convolution (tiletune computes 2-d ones)");
  if (sig.transposed != kNone && args.concrete(sig.transposed) == "True") unsupported("a transposed convolution");
  std::vector<const Tensor*> tensors = {&x, &w};
  if (dy.present) tensors.push_back(&dy);

  ConvProblem p;
  p.in_type = p.out_type = common_dtype(tensors);
  p.layout = conv_layout(tensors);
  p.n = x.dim(0), p.c = x.dim(1), p.h = x.dim(2), p.w = x.dim(3);
  p.k = w.dim(0), p.r = w.dim(2), p.s = w.dim(3);
  std::tie(p.stride_h, p.stride_w) = pair_arg(args, sig.stride, "stride", 1, sink);
  std::tie(p.pad_h, p.pad_w) = pair_arg(args, sig.pad, "padding", 0, sink);
  std::tie(p.dil_h, p.dil_w) = pair_arg(args, sig.dil, "dilation", 1, sink);
  // The weight holds C / groups input channels: groups follow from the shapes where not recorded.
  const std::string groups = args.concrete(sig.groups);
  p.groups = groups.empty() ? (w.dim(1) > 0 ? x.dim(1) / w.dim(1) : 0) : parse_int(groups, "groups");
  if (p.groups < 1 || w.dim(1) * p.groups != x.dim(1))
    throw Skip{SkipKind::Invalid, "weight of " + std::to_string(w.dim(1)) + " channels for an input of " +
                                      std::to_string(x.dim(1)) + " in " + std::to_string(p.groups) + " groups"};
  if (!dy.present) return {p};

  if (dy.dim(0) != p.n || dy.dim(1) != p.k || dy.dim(2) != p.p() || dy.dim(3) != p.q())
    throw Skip{SkipKind::Invalid, "grad_output is not the shape of this convolution's output"};
  // output_mask: [input, weight, bias] gradients; not recorded: both of ours.
  const std::string mask = args.concrete(sig.mask);
  bool want_dgrad = true, want_wgrad = true;
  if (!mask.empty()) {
    const std::vector<std::string> items = list_items(mask);
    if (items.size() != 3) unparseable("output_mask " + mask);
    want_dgrad = items[0] == "True";
    want_wgrad = items[1] == "True";
  }
  std::vector<Problem> out;
  for (auto [want, direction] : {std::pair{want_dgrad, ConvDirection::BackwardData}, std::pair{want_wgrad, ConvDirection::BackwardFilter}})
    if (want) {
      p.direction = direction;
      out.push_back(p);
    }
  if (out.empty()) throw Skip{SkipKind::NotGemm, "only the bias gradient"};
  return out;
}

// ---- the trace ---------------------------------------------------------------------------------

struct Op {
  std::size_t event;  // its index in traceEvents, from 1
  const json* e;
  OpKind kind;
  std::string thread;
  double start = 0, end = 0;
  bool inside_conv = false;  // nested in a convolution's event: its implementation, not a call
  bool calls_gemm = false;   // linear/matmul with a GEMM op nested in it
};

std::vector<Op> operator_events(const json& events) {
  std::vector<Op> ops;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) continue;
    if (e.contains("ph") && e["ph"] != "X") continue;
    const OpKind kind = kind_of(e["name"].get<std::string>());
    if (kind == OpKind::Other) continue;
    Op op{i + 1, &e, kind, e.value("pid", json()).dump() + "/" + e.value("tid", json()).dump()};
    if (e.contains("ts") && e["ts"].is_number() && e.contains("dur") && e["dur"].is_number()) {
      op.start = e["ts"].get<double>();
      op.end = op.start + e["dur"].get<double>();
    } else {
      op.thread = "untimed " + std::to_string(i);  // nested in nothing
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

// Marks which ops are nested in which: per thread, by start (outer first where two start together).
void nest(std::vector<Op>& ops) {
  std::vector<Op*> order;
  for (Op& op : ops) order.push_back(&op);
  std::sort(order.begin(), order.end(), [](const Op* a, const Op* b) {
    if (a->thread != b->thread) return a->thread < b->thread;
    if (a->start != b->start) return a->start < b->start;
    if (a->end != b->end) return a->end > b->end;
    return a->event < b->event;
  });
  std::vector<Op*> open;  // the ops enclosing the current one, outermost first
  for (Op* op : order) {
    while (!open.empty() && (open.back()->thread != op->thread || op->end > open.back()->end)) open.pop_back();
    for (Op* outer : open) {
      if (outer->kind == OpKind::Conv || outer->kind == OpKind::ConvBackward) op->inside_conv = true;
      if (outer->kind == OpKind::GemmCaller && (op->kind == OpKind::Gemm || op->kind == OpKind::GemmCaller))
        outer->calls_gemm = true;
    }
    open.push_back(op);
  }
}

}  // namespace

void read_torch_trace(const std::string& text, Sink& sink) {
  const json root = parse_json(text, "trace " + sink.report().file);
  const json* events = &root;
  if (root.is_object()) {
    if (!root.contains("traceEvents") || !root["traceEvents"].is_array())
      throw Error("trace " + sink.report().file + " has no \"traceEvents\" array");
    events = &root["traceEvents"];
  } else if (!root.is_array()) {
    throw Error("trace " + sink.report().file + " is neither a Chrome trace object nor an array of events");
  }
  sink.report().unit = "event";
  std::vector<Op> ops = operator_events(*events);
  nest(ops);
  for (const Op& op : ops) {
    if (op.inside_conv || op.calls_gemm) continue;  // counted as the op around it, or the one inside
    const std::string name = (*op.e)["name"].get<std::string>();
    static const json kNoArgs;
    const json& args = op.e->contains("args") ? (*op.e)["args"] : kNoArgs;
    const std::string shown = name + " " + (args.is_object() && args.contains("Input Dims") ? args["Input Dims"].dump() : "");
    sink.take(op.event, shown, [&] {
      const Args a(args, sink);
      if (op.kind == OpKind::Gemm || op.kind == OpKind::GemmCaller) return read_gemm(name, a, sink.options());
      return read_conv(name, a, sink);
    });
  }
}

}  // namespace tiletune::imports
