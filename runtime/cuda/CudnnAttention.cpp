//===- CudnnAttention.cpp - cuDNN's fused flash attention -----------------===//
//
// cuDNN's SDPA through its C++ graph API (cudnn-frontend, header-only).
// cuDNN's tensors are always (batch, heads, seq, dim) with strides, so
// titan's B x S x H x D buffers are described by their strides and no
// transposes run; so are context parallel's chunks, views into them. The
// forward's softmax statistics ("Stats": the natural log-sum-exp of each scaled
// score row, f32, B x H x S x 1) are exactly titan.attention's lse, which the
// backward takes back. The backward runs cuDNN's default algorithm (dQ
// accumulated atomically in f32), as PyTorch and TorchTitan do, or with
// `deterministic` (debug.deterministic) its deterministic one, whose dP
// workspace grows as S^2. The memory plan holds either's workspace as
// cudnn-frontend sizes it (titan/Target/CUDA/KernelWorkspaces.h); a larger
// request is an error, and so is a bf16/f16 problem cuDNN cannot run on a
// sequence too long for the exact kernels (attentionReferenceAllowed).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "Error.h"

#include "titan/Target/CUDA/KernelWorkspaces.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

/// "the flash-attention backward (deterministic) of B 1 S 8192 Hq 32 Hkv 8
/// D 128 bf16", with the views' rows where they are not the problem's own
/// (context parallel's chunk pairs).
std::string describe(bool backward, bool deterministic, ElementType type,
                     const AttentionShape &s, const SdpaViews &views) {
  auto n = [](int64_t v) { return std::to_string(v); };
  std::string text =
      std::string("the flash-attention ") +
      (backward ? (deterministic ? "backward (deterministic)" : "backward")
                : "forward") +
      " of B " + n(s.batch) + " S " + n(s.seq) + " Hq " + n(s.qHeads) +
      " Hkv " + n(s.kvHeads) + " D " + n(s.headDim) +
      (type == ElementType::BF16 ? " bf16" : " f16");
  if (views.queryRows != s.seq || views.keyRows != s.seq)
    text += " (views into " + n(views.queryRows) + " query rows and " +
            n(views.keyRows) + " key rows)";
  return text;
}

/// cuDNN cannot run `problem` (`why`): the exact kernels may stand in only
/// where titan::cuda::attentionReferenceAllowed says; elsewhere the run
/// stops, naming the problem.
void requireReferenceAllowed(const std::string &problem, const SdpaViews &views,
                             const std::string &why) {
  if (titan::cuda::attentionReferenceAllowed(false, views.keyRows))
    return;
  kernelFatal("cuDNN cannot run " + problem + ": " + why +
              ". The exact attention kernels stand in only for f32 or at "
              "most " +
              std::to_string(titan::cuda::kAttentionReferenceMaxKeys) +
              " keys (titan/Target/CUDA/KernelWorkspaces.h): they are "
              "O(S^2 D) on CUDA cores, minutes a step at S = 8192");
}

} // namespace

#ifdef TITAN_HAVE_CUDNN_FRONTEND

#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;

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
/// Only engines whose own workspace is within `backendBytes` (the memory
/// plan's share for it; the frontend's scratch is planned exactly) are
/// considered, so an engine that fits the plan is chosen where one exists
/// instead of the heuristic's first choice failing the run.
std::string finish(fe::graph::Graph &g, cudnnHandle_t handle,
                   int64_t backendBytes) {
  fe::error_t e = g.validate();
  if (e.is_good())
    e = g.build_operation_graph(handle);
  if (e.is_good())
    e = g.create_execution_plans({fe::HeurMode_t::A});
  if (e.is_good())
    g.deselect_workspace_greater_than(backendBytes);
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
    std::string problem; ///< describe()'s, for errors
  };
  using Key = std::tuple<
      bool, bool, int, int64_t, int64_t, int64_t, int64_t, int64_t, double,
      std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>>;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Plan> plans;

  Impl() {
    cudnnStatus_t rc = cudnnCreate(&handle);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnCreate failed: ") +
                  cudnnGetErrorString(rc));
  }
  ~Impl() { cudnnDestroy(handle); }

  /// The cached plan of a problem, built on first use; null when cuDNN has
  /// no engine for it and the exact kernels may run it instead (said once).
  Plan *plan(bool backward, bool deterministic, ElementType type,
             const AttentionShape &s, const SdpaViews &views, double scale) {
    Key key{backward, deterministic, int(type), s.batch, s.seq,
            s.qHeads, s.kvHeads,     s.headDim, scale,   views.key()};
    auto it = plans.find(key);
    if (it != plans.end())
      return it->second.graph ? &it->second : nullptr;
    Plan p;
    p.problem = describe(backward, deterministic, type, s, views);
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
    } else {
      auto o = g.tensor(bshd("O", O, s, s.qHeads, views.outRows));
      auto dO = g.tensor(bshd("dO", DO, s, s.qHeads, views.outRows));
      auto lse = g.tensor(stats("Stats", Stats, s, views.lseRows));
      auto options = fe::graph::SDPA_backward_attributes()
                         .set_name("titan.attention_grad")
                         .set_causal_mask(views.causal)
                         .set_attn_scale(float(scale))
                         .set_deterministic_algorithm(deterministic);
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
    }
    int64_t backendBytes =
        backward ? titan::cuda::attentionGradBackendWorkspaceBytes(
                       s.batch, s.qHeads, s.seq, deterministic)
                 : titan::cuda::kAttentionSlackBytes;
    std::string failure = finish(g, handle, backendBytes);
    if (failure.empty()) {
      check(g.get_workspace_size(p.workspace), "workspace query");
    } else {
      requireReferenceAllowed(p.problem, views, "cuDNN says: " + failure);
      std::fprintf(stderr,
                   "warning: cuDNN has no engine for %s (%s); the exact "
                   "kernels run it\n",
                   p.problem.c_str(), failure.c_str());
      p.graph = nullptr;
    }
    Plan &stored = plans.emplace(key, std::move(p)).first->second;
    return stored.graph ? &stored : nullptr;
  }

  /// Runs `p` in `workspace`, the memory plan's `planned` bytes, which
  /// must hold cuDNN's request: the plan sizes it as the frontend does
  /// (titan/Target/CUDA/KernelWorkspaces.h), so more is a planning error,
  /// not something to allocate outside the arena.
  void run(Plan &p, std::unordered_map<int64_t, void *> &pack, void *workspace,
           size_t planned, cudaStream_t stream) {
    if (size_t(p.workspace) > planned)
      kernelFatal(
          "cuDNN's " + p.problem + " asks for " + std::to_string(p.workspace) +
          " bytes of workspace, more than the " + std::to_string(planned) +
          " the memory plan holds for it "
          "(titan/Target/CUDA/KernelWorkspaces.h)");
    cudnnStatus_t rc = cudnnSetStream(handle, stream);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnSetStream failed: ") +
                  cudnnGetErrorString(rc));
    check(p.graph->execute(handle, pack, workspace), p.problem);
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
  Impl::Plan *p = impl_->plan(false, false, type, s, views, scale);
  if (!p)
    return false;
  std::unordered_map<int64_t, void *> pack = {{Q, const_cast<void *>(q)},
                                              {K, const_cast<void *>(k)},
                                              {V, const_cast<void *>(v)},
                                              {O, out},
                                              {Stats, lse}};
  impl_->run(*p, pack, workspace, workspaceBytes, stream);
  return true;
}

bool CudnnAttention::backward(ElementType type, const void *q, const void *k,
                              const void *v, const void *out, const float *lse,
                              const void *dout, void *dq, void *dk, void *dv,
                              const AttentionShape &s, const SdpaViews &views,
                              double scale, bool deterministic, void *workspace,
                              size_t workspaceBytes, cudaStream_t stream) {
  Impl::Plan *p = impl_->plan(true, deterministic, type, s, views, scale);
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
  impl_->run(*p, pack, workspace, workspaceBytes, stream);
  return true;
}

#else // no cudnn-frontend headers: the exact kernels, on short sequences

namespace {
constexpr const char *kNoFrontend =
    "this build has no cudnn-frontend headers (scripts/setup.sh unpacks "
    "them into .deps/)";
} // namespace

struct CudnnAttention::Impl {};
bool titanrt::cuda::haveCudnnAttention() { return false; }
CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::forward(ElementType type, const void *, const void *,
                             const void *, void *, float *,
                             const AttentionShape &s, const SdpaViews &views,
                             double, void *, size_t, cudaStream_t) {
  requireReferenceAllowed(describe(false, false, type, s, views), views,
                          kNoFrontend);
  return false;
}
bool CudnnAttention::backward(ElementType type, const void *, const void *,
                              const void *, const void *, const float *,
                              const void *, void *, void *, void *,
                              const AttentionShape &s, const SdpaViews &views,
                              double, bool deterministic, void *, size_t,
                              cudaStream_t) {
  requireReferenceAllowed(describe(true, deterministic, type, s, views), views,
                          kNoFrontend);
  return false;
}

#endif
