//===- CudnnAttention.cpp - cuDNN's fused flash attention -----------------===//
//
// cuDNN's SDPA through its C++ graph API (cudnn-frontend, header-only); the
// graphs themselves are CudnnGraphs.h's. The backward runs cuDNN's default
// algorithm (dQ accumulated atomically in f32), as PyTorch and TorchTitan
// do, or with `deterministic` (debug.deterministic) its deterministic one,
// whose dP workspace grows as S^2.
//
// Each problem runs the heuristic's first engine that builds, with no cap on
// its workspace: a cap (formerly 4 MiB) can leave no engine at all at
// S = 8192, and the exact kernels then stood in unnoticed. The memory plan
// holds the workspace cudnn-frontend states plus headroom
// (titan/Contract/CUDAWorkspaces.h); an engine that needs more runs in
// a buffer of this context's, outside the arena (see Impl::workspaceFor).
//
// Environment: TITAN_CUDNN_LOG=1 prints each graph's engine and workspace
// when it first runs; TITAN_CUDNN_FALLBACK_FATAL=1 stops the run wherever a
// bf16/f16 problem would not run on cuDNN (the parity checks set it, so
// that they exercise cuDNN and not the exact kernels).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "CudnnGraphs.h"

#include "Error.h"

#include "titan/Contract/CUDAWorkspaces.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

/// Whether environment variable `name` is set to something other than ""
/// or "0".
bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

/// cuDNN cannot run `p` (`why`): the exact kernels may stand in only where
/// titan::cuda::attentionReferenceAllowed says and
/// TITAN_CUDNN_FALLBACK_FATAL is not set; elsewhere the run stops, naming
/// the problem. Callers call it once a problem, as it warns.
void requireReferenceAllowed(const SdpaProblem &p, const std::string &why) {
  std::string refusal = cudnnRefusal(p, why);
  if (envFlag("TITAN_CUDNN_FALLBACK_FATAL"))
    kernelFatal(refusal + " (TITAN_CUDNN_FALLBACK_FATAL=1: the exact "
                          "attention kernels may not stand in)");
  if (!titan::cuda::attentionReferenceAllowed(false, p.views.keyRows))
    kernelFatal(refusal +
                ". The exact attention kernels stand in only for f32 or at "
                "most " +
                std::to_string(titan::cuda::kAttentionReferenceMaxKeys) +
                " keys (titan/Contract/CUDAWorkspaces.h): they are "
                "O(S^2 D) on CUDA cores, minutes a step at S = 8192");
  std::fprintf(stderr, "warning: %s; the exact attention kernels run it\n",
               refusal.c_str());
}

SdpaProblem problem(bool backward, bool deterministic, Dtype type,
                    const AttentionShape &s, const SdpaViews &views,
                    double scale, const DeviceDocuments &documents) {
  return {backward, deterministic,   type,         s, views,
          scale,    bool(documents), documents.seq};
}

} // namespace

#ifdef TITAN_HAVE_CUDNN_FRONTEND

#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;

namespace {

/// The block-causal mask's inputs in `pack`: the starts from the problem's
/// first query row on and its rows' global positions (`offsets` holds the
/// by-value scalars until the graph has run).
void packDocuments(std::unordered_map<int64_t, void *> &pack,
                   const DeviceDocuments &documents, int32_t (&offsets)[2]) {
  if (!documents)
    return;
  offsets[0] = int32_t(documents.queryOffset);
  offsets[1] = int32_t(documents.keyOffset);
  pack[DocumentStarts] =
      const_cast<int32_t *>(documents.starts + documents.queryOffset);
  pack[QueryOffset] = &offsets[0];
  pack[KeyOffset] = &offsets[1];
}

void check(fe::error_t e, const std::string &what) {
  if (!e.is_good())
    kernelFatal("cuDNN flash attention: " + what +
                " failed: " + e.get_message());
}

void checkCuda(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    kernelFatal("cuDNN flash attention: " + what + ": " +
                cudaGetErrorString(rc));
}

/// Builds the graph's execution plan: the heuristic's first engine that
/// cuDNN supports and builds, whatever its workspace. "" on success, else
/// what cuDNN said.
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
    int64_t workspace = 0;                   ///< get_workspace_size()'s
    SdpaProblem problem;
    bool logged = false;
  };
  cudnnHandle_t handle = nullptr;
  std::map<decltype(SdpaProblem().key()), Plan> plans;
  /// Workspace for engines that need more than the memory plan holds: the
  /// largest so far last, shared by every problem, which is sound because
  /// every cuDNN call runs on the one compute stream (KernelContext), in
  /// order. Earlier buffers are kept until the context goes: captured CUDA
  /// graphs and enqueued kernels may still use them.
  std::vector<std::pair<void *, size_t>> overflow;
  bool log = envFlag("TITAN_CUDNN_LOG");

  Impl() {
    cudnnStatus_t rc = cudnnCreate(&handle);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnCreate failed: ") +
                  cudnnGetErrorString(rc));
  }
  ~Impl() {
    for (auto [buffer, bytes] : overflow)
      cudaFree(buffer);
    cudnnDestroy(handle);
  }

  /// The cached plan of a problem, built on first use; null when cuDNN has
  /// no engine for it and the exact kernels may run it instead.
  Plan *plan(const SdpaProblem &problem) {
    auto [it, inserted] = plans.try_emplace(problem.key());
    Plan &p = it->second;
    if (inserted) {
      p.problem = problem;
      p.graph = buildSdpaGraph(problem);
      std::string failure = finish(*p.graph, handle);
      if (failure.empty()) {
        check(p.graph->get_workspace_size(p.workspace), "workspace query");
      } else {
        p.graph = nullptr;
        requireReferenceAllowed(problem, "cuDNN says: " + failure);
      }
    }
    return p.graph ? &p : nullptr;
  }

  /// Where `p` runs: the memory plan's `planned` bytes at `workspace` when
  /// its workspace fits, else this context's overflow buffer, grown to it.
  /// Growing is sound only outside a CUDA graph capture, and it happens
  /// there: a problem's plan is made, and its workspace known, when it first
  /// runs, which is in a step's first, eager run (CudaDevice.cpp). A
  /// capture that reaches it anyway is refused: cudaMalloc there would fail
  /// the capture.
  void *workspaceFor(const Plan &p, void *workspace, size_t planned,
                     cudaStream_t stream) {
    size_t need = size_t(p.workspace);
    if (need <= planned)
      return workspace;
    if (!overflow.empty() && overflow.back().second >= need)
      return overflow.back().first;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    checkCuda(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    std::string asks = "cuDNN's engine for " + describe(p.problem) + " needs " +
                       std::to_string(need) +
                       " bytes of workspace, more than the " +
                       std::to_string(planned) +
                       " the memory plan holds for it "
                       "(titan/Contract/CUDAWorkspaces.h)";
    if (capture != cudaStreamCaptureStatusNone)
      kernelFatal(asks + ", and it first runs under a CUDA graph capture, "
                         "where no buffer can be allocated (rerun with "
                         "--debug.no_cuda_graphs)");
    void *buffer = nullptr;
    if (cudaMalloc(&buffer, need) != cudaSuccess) {
      size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      kernelFatal(asks + ", and allocating it outside the arena failed (" +
                  std::to_string(free) + " bytes free)");
    }
    std::fprintf(stderr, "titan: %s; allocated outside the arena\n",
                 asks.c_str());
    overflow.emplace_back(buffer, need);
    return buffer;
  }

  void logOnce(Plan &p, size_t planned) {
    if (!log || p.logged)
      return;
    p.logged = true;
    std::string engine;
    if (!p.graph->get_plan_name(engine).is_good())
      engine = "(unnamed)";
    std::fprintf(stderr,
                 "titan: cuDNN SDPA %s: engine %s, workspace %lld bytes "
                 "(%s the %zu planned)\n",
                 describe(p.problem).c_str(), engine.c_str(),
                 static_cast<long long>(p.workspace),
                 size_t(p.workspace) <= planned ? "within" : "beyond", planned);
  }

  void run(Plan &p, std::unordered_map<int64_t, void *> &pack, void *workspace,
           size_t planned, cudaStream_t stream) {
    logOnce(p, planned);
    void *scratch = workspaceFor(p, workspace, planned, stream);
    cudnnStatus_t rc = cudnnSetStream(handle, stream);
    if (rc != CUDNN_STATUS_SUCCESS)
      kernelFatal(std::string("cudnnSetStream failed: ") +
                  cudnnGetErrorString(rc));
    check(p.graph->execute(handle, pack, scratch), describe(p.problem));
  }
};

bool titanrt::cuda::haveCudnnAttention() { return true; }

CudnnAttention::CudnnAttention() : impl_(std::make_unique<Impl>()) {}
CudnnAttention::~CudnnAttention() = default;

bool CudnnAttention::forward(Dtype type, const void *q, const void *k,
                             const void *v, void *out, float *lse,
                             const AttentionShape &s, const SdpaViews &views,
                             double scale, void *workspace,
                             size_t workspaceBytes, cudaStream_t stream,
                             const DeviceDocuments &documents) {
  Impl::Plan *p =
      impl_->plan(problem(false, false, type, s, views, scale, documents));
  if (!p)
    return false;
  std::unordered_map<int64_t, void *> pack = {{Q, const_cast<void *>(q)},
                                              {K, const_cast<void *>(k)},
                                              {V, const_cast<void *>(v)},
                                              {O, out},
                                              {Stats, lse}};
  int32_t offsets[2];
  packDocuments(pack, documents, offsets);
  impl_->run(*p, pack, workspace, workspaceBytes, stream);
  return true;
}

bool CudnnAttention::backward(Dtype type, const void *q, const void *k,
                              const void *v, const void *out, const float *lse,
                              const void *dout, void *dq, void *dk, void *dv,
                              const AttentionShape &s, const SdpaViews &views,
                              double scale, bool deterministic, void *workspace,
                              size_t workspaceBytes, cudaStream_t stream,
                              const DeviceDocuments &documents) {
  Impl::Plan *p = impl_->plan(
      problem(true, deterministic, type, s, views, scale, documents));
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
  int32_t offsets[2];
  packDocuments(pack, documents, offsets);
  impl_->run(*p, pack, workspace, workspaceBytes, stream);
  return true;
}

#else // no cudnn-frontend headers: the exact kernels, on short sequences

namespace {
constexpr const char *kNoFrontend =
    "this build has no cudnn-frontend headers (scripts/setup.sh unpacks "
    "them into .deps/)";

/// requireReferenceAllowed, once a problem.
void referenceOnce(const SdpaProblem &p) {
  static std::set<decltype(SdpaProblem().key())> seen;
  if (seen.insert(p.key()).second)
    requireReferenceAllowed(p, kNoFrontend);
}

} // namespace

struct CudnnAttention::Impl {};
bool titanrt::cuda::haveCudnnAttention() { return false; }
CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::forward(Dtype type, const void *, const void *,
                             const void *, void *, float *,
                             const AttentionShape &s, const SdpaViews &views,
                             double scale, void *, size_t, cudaStream_t,
                             const DeviceDocuments &documents) {
  referenceOnce(problem(false, false, type, s, views, scale, documents));
  return false;
}
bool CudnnAttention::backward(Dtype type, const void *, const void *,
                              const void *, const void *, const float *,
                              const void *, void *, void *, void *,
                              const AttentionShape &s, const SdpaViews &views,
                              double scale, bool deterministic, void *, size_t,
                              cudaStream_t, const DeviceDocuments &documents) {
  referenceOnce(problem(true, deterministic, type, s, views, scale, documents));
  return false;
}

#endif
