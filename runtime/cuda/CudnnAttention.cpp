//===- CudnnAttention.cpp - cuDNN's fused flash attention -----------------===//
//
// cuDNN's SDPA through its C++ graph API (cudnn-frontend, header-only).
// cuDNN's tensors are always (batch, heads, seq, dim) with strides, so
// titan's B x S x H x D buffers are described by their strides and no
// transposes run; so are context parallel's chunks, views into them. The
// forward's softmax statistics ("Stats": the natural log-sum-exp of each scaled
// score row, f32, B x H x S x 1) are exactly titan.attention's lse, which the
// backward takes back. The backward is asked for cuDNN's deterministic
// algorithm (no atomics in dQ), as the rest of the CUDA target is
// deterministic.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "Error.h"

#include <cstdio>
#include <string>
#include <vector>

#ifdef TITAN_HAVE_CUDNN_FRONTEND

#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;
using namespace titanrt;
using namespace titanrt::cuda;

namespace {

enum Uid : int64_t { Q = 1, K, V, O, Stats, DO, DQ, DK, DV };

void check(fe::error_t e, const std::string &what) {
  if (!e.is_good())
    kernelFatal("cuDNN flash attention: " + what +
                " failed: " + e.get_message());
}

/// titan's B x S x H x D layout as cuDNN's (B, H, S, D) dims and strides:
/// s.seq rows of a buffer whose batches are `rows` rows apart.
std::vector<int64_t> bshdDims(const AttentionShape &s, int64_t heads) {
  return {s.batch, heads, s.seq, s.headDim};
}
std::vector<int64_t> bshdStrides(const AttentionShape &s, int64_t heads,
                                 int64_t rows) {
  return {rows * heads * s.headDim, s.headDim, heads * s.headDim, 1};
}
fe::graph::Tensor_attributes bshd(const char *name, int64_t uid,
                                  const AttentionShape &s, int64_t heads,
                                  int64_t rows) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim(bshdDims(s, heads))
      .set_stride(bshdStrides(s, heads, rows));
}

/// The log-sum-exp, B x Hq x `rows` in f32, as cuDNN's (B, H, S, 1).
std::vector<int64_t> statsStrides(const AttentionShape &s, int64_t rows) {
  return {s.qHeads * rows, rows, 1, 1};
}
fe::graph::Tensor_attributes stats(const char *name, int64_t uid,
                                   const AttentionShape &s, int64_t rows) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({s.batch, s.qHeads, s.seq, 1})
      .set_stride(statsStrides(s, rows))
      .set_data_type(fe::DataType_t::FLOAT);
}

std::shared_ptr<fe::graph::Graph> newGraph(ElementType type) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(type == ElementType::BF16 ? fe::DataType_t::BFLOAT16
                                                : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

/// Builds the graph's execution plan; "" on success, else what cuDNN said.
std::string finish(fe::graph::Graph &g, cudnnHandle_t handle) {
  fe::error_t e = g.validate();
  if (e.is_good())
    e = g.build_operation_graph(handle);
  if (e.is_good())
    e = g.create_execution_plans({fe::HeurMode_t::A});
  if (e.is_good())
    e = g.check_support(handle);
  if (e.is_good())
    e = g.build_plans(handle);
  return e.is_good() ? std::string() : e.get_message();
}

} // namespace

struct CudnnAttention::Impl {
  struct Plan {
    std::shared_ptr<fe::graph::Graph> graph; ///< null: cuDNN cannot run it
    int64_t workspace = 0;
    void *extra = nullptr; ///< cuDNN's workspace when the plan's is short
  };
  using Key = std::tuple<
      bool, int, int64_t, int64_t, int64_t, int64_t, int64_t, double,
      std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>>;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Plan> plans;

  Impl() {
    cudnnStatus_t rc = cudnnCreate(&handle);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnCreate failed: ") +
                  cudnnGetErrorString(rc));
  }
  ~Impl() {
    for (auto &[key, plan] : plans)
      if (plan.extra)
        cudaFree(plan.extra);
    cudnnDestroy(handle);
  }

  /// The cached plan of a problem, built on first use; null when cuDNN has
  /// no engine for it (said once; the exact kernels run it instead).
  Plan *plan(bool backward, ElementType type, const AttentionShape &s,
             const SdpaViews &views, double scale) {
    Key key{backward,  int(type), s.batch, s.seq,      s.qHeads,
            s.kvHeads, s.headDim, scale,   views.key()};
    auto it = plans.find(key);
    if (it != plans.end())
      return it->second.graph ? &it->second : nullptr;
    Plan p;
    std::string failure;
    p.graph = newGraph(type);
    fe::graph::Graph &g = *p.graph;
    auto q = g.tensor(bshd("Q", Q, s, s.qHeads, views.queryRows));
    auto k = g.tensor(bshd("K", K, s, s.kvHeads, views.keyRows));
    auto v = g.tensor(bshd("V", V, s, s.kvHeads, views.keyRows));
    if (!backward) {
      auto options = fe::graph::SDPA_attributes()
                         .set_name("titan.attention")
                         .set_generate_stats(true)
                         .set_causal_mask(views.causal)
                         .set_attn_scale(float(scale));
      auto [o, lse] = g.sdpa(q, k, v, options);
      o->set_output(true)
          .set_uid(O)
          .set_dim(bshdDims(s, s.qHeads))
          .set_stride(bshdStrides(s, s.qHeads, views.outRows));
      lse->set_output(true)
          .set_uid(Stats)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim({s.batch, s.qHeads, s.seq, 1})
          .set_stride(statsStrides(s, views.lseRows));
      failure = finish(g, handle);
    } else {
      auto o = g.tensor(bshd("O", O, s, s.qHeads, views.outRows));
      auto dO = g.tensor(bshd("dO", DO, s, s.qHeads, views.outRows));
      auto lse = g.tensor(stats("Stats", Stats, s, views.lseRows));
      auto options = fe::graph::SDPA_backward_attributes()
                         .set_name("titan.attention_grad")
                         .set_causal_mask(views.causal)
                         .set_attn_scale(float(scale))
                         .set_deterministic_algorithm(true);
      auto [dq, dk, dv] = g.sdpa_backward(q, k, v, o, dO, lse, options);
      dq->set_output(true)
          .set_uid(DQ)
          .set_dim(bshdDims(s, s.qHeads))
          .set_stride(bshdStrides(s, s.qHeads, views.queryGradRows));
      for (auto [t, uid] : {std::pair(dk, DK), {dv, DV}})
        t->set_output(true)
            .set_uid(uid)
            .set_dim(bshdDims(s, s.kvHeads))
            .set_stride(bshdStrides(s, s.kvHeads, views.keyGradRows));
      failure = finish(g, handle);
    }
    if (failure.empty())
      check(g.get_workspace_size(p.workspace), "workspace query");
    if (!failure.empty()) {
      std::fprintf(stderr,
                   "warning: cuDNN has no flash-attention engine for %s of "
                   "B %lld S %lld Hq %lld Hkv %lld D %lld (%s); the exact "
                   "kernels run it\n",
                   backward ? "the backward" : "the forward",
                   (long long)s.batch, (long long)s.seq, (long long)s.qHeads,
                   (long long)s.kvHeads, (long long)s.headDim, failure.c_str());
      p.graph = nullptr;
    }
    Plan &stored = plans.emplace(key, std::move(p)).first->second;
    return stored.graph ? &stored : nullptr;
  }

  void run(Plan &p, std::unordered_map<int64_t, void *> &pack, void *workspace,
           size_t planned, cudaStream_t stream, const char *what) {
    if (size_t(p.workspace) > planned && !p.extra) {
      // Only on a plan's first use, which is never inside a capture (the
      // first step runs eagerly).
      std::fprintf(stderr,
                   "warning: cuDNN's %s asks for %lld bytes of workspace, "
                   "more than the %zu the memory plan reserves "
                   "(titan/Target/CUDA/KernelWorkspaces.h); allocating "
                   "them once\n",
                   what, (long long)p.workspace, planned);
      if (cudaMalloc(&p.extra, size_t(p.workspace)) != cudaSuccess)
        kernelFatal(std::string("cuDNN ") + what + ": cannot allocate " +
                    std::to_string(p.workspace) + " bytes of workspace");
    }
    cudnnStatus_t rc = cudnnSetStream(handle, stream);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnSetStream failed: ") +
                  cudnnGetErrorString(rc));
    check(p.graph->execute(handle, pack, p.extra ? p.extra : workspace), what);
  }
};

bool titanrt::cuda::haveCudnnAttention() { return true; }

CudnnAttention::CudnnAttention() : impl_(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;

bool CudnnAttention::forward(ElementType type, const void *q, const void *k,
                             const void *v, void *out, float *lse,
                             const AttentionShape &s, const SdpaViews &views,
                             double scale, void *workspace,
                             size_t workspaceBytes, cudaStream_t stream) {
  Impl::Plan *p = impl_->plan(false, type, s, views, scale);
  if (!p)
    return false;
  std::unordered_map<int64_t, void *> pack = {{Q, const_cast<void *>(q)},
                                              {K, const_cast<void *>(k)},
                                              {V, const_cast<void *>(v)},
                                              {O, out},
                                              {Stats, lse}};
  impl_->run(*p, pack, workspace, workspaceBytes, stream,
             "attention (flash forward)");
  return true;
}

bool CudnnAttention::backward(ElementType type, const void *q, const void *k,
                              const void *v, const void *out, const float *lse,
                              const void *dout, void *dq, void *dk, void *dv,
                              const AttentionShape &s, const SdpaViews &views,
                              double scale, void *workspace,
                              size_t workspaceBytes, cudaStream_t stream) {
  Impl::Plan *p = impl_->plan(true, type, s, views, scale);
  if (!p)
    return false;
  std::unordered_map<int64_t, void *> pack = {{Q, const_cast<void *>(q)},
                                              {K, const_cast<void *>(k)},
                                              {V, const_cast<void *>(v)},
                                              {O, const_cast<void *>(out)},
                                              {DO, const_cast<void *>(dout)},
                                              {Stats, const_cast<float *>(lse)},
                                              {DQ, dq},
                                              {DK, dk},
                                              {DV, dv}};
  impl_->run(*p, pack, workspace, workspaceBytes, stream,
             "attention_grad (flash backward)");
  return true;
}

#else // no cudnn-frontend headers: the exact kernels serve every type

using namespace titanrt;
using namespace titanrt::cuda;

struct CudnnAttention::Impl {};
bool titanrt::cuda::haveCudnnAttention() { return false; }
CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::forward(ElementType, const void *, const void *,
                             const void *, void *, float *,
                             const AttentionShape &, const SdpaViews &, double,
                             void *, size_t, cudaStream_t) {
  return false;
}
bool CudnnAttention::backward(ElementType, const void *, const void *,
                              const void *, const void *, const float *,
                              const void *, void *, void *, void *,
                              const AttentionShape &, const SdpaViews &, double,
                              void *, size_t, cudaStream_t) {
  return false;
}

#endif
