//===- CudnnGraphs.h - the cuDNN SDPA graphs titan builds -------*- C++ -*-===//
//
// The cudnn-frontend graphs of titan's flash attention, built in one place
// for the runtime (CudnnAttention.cpp, which then plans and runs them) and
// for the graph test (unittests/CUDA/CudnnGraphTest.cpp, which validates
// them for sm_90 on a machine without a GPU). Host code only. The graph
// builder exists only where the build found cudnn-frontend
// (TITAN_HAVE_CUDNN_FRONTEND); the problem and its description always do.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_CUDNNGRAPHS_H
#define TITANRT_CUDA_CUDNNGRAPHS_H

#include "Attention.h"

#include <memory>
#include <string>

namespace titanrt::cuda {

/// One cuDNN SDPA problem: a forward (with the log-sum-exp) or a backward
/// (`deterministic`: cuDNN's deterministic algorithm) of `shape` on `views`;
/// with `documents`, TorchTitan's block-causal mask, whose starts (rows of
/// `documentSeq`, the whole sequence) and the global positions of the
/// problem's first query and key rows are inputs of the graph.
struct SdpaProblem {
  bool backward = false, deterministic = false;
  Dtype type = Dtype::bf16;
  AttentionShape shape{};
  SdpaViews views{};
  double scale = 1.0;
  bool documents = false;
  int64_t documentSeq = 0;
  auto key() const {
    return std::make_tuple(backward, deterministic, int(type), shape.key(),
                           views.key(), scale, documents, documentSeq);
  }
};

/// "the flash-attention backward (deterministic) of B 1 S 8192 Hq 32 Hkv 8
/// D 128 bf16", with the views' rows where they are not the problem's own
/// (context parallel's chunk pairs) and the mask where it is not causal.
std::string describe(const SdpaProblem &p);

/// How titan reports that cuDNN refused `p`: "cuDNN cannot run <problem>:
/// <why>".
std::string cudnnRefusal(const SdpaProblem &p, const std::string &why);

} // namespace titanrt::cuda

#ifdef TITAN_HAVE_CUDNN_FRONTEND

#include <cudnn_frontend.h>

namespace titanrt::cuda {

/// The variant pack's tensor uids (DocumentStarts: the block-causal mask's
/// i32 starts from the problem's first query row on; QueryOffset and
/// KeyOffset: the i32 global positions of its first query and key rows,
/// passed by value).
enum SdpaUid : int64_t {
  Q = 1,
  K,
  V,
  O,
  Stats,
  DO,
  DQ,
  DK,
  DV,
  DocumentStarts,
  QueryOffset,
  KeyOffset
};

/// `p`'s frontend graph, not yet validated: titan's B x S x H x D buffers
/// described by their strides, the log-sum-exp as cuDNN's f32 Stats.
/// `smVersion` > 0 (e.g. 90) fixes the target GPU so that the graph
/// validates without a device; 0 leaves it to the current device.
std::shared_ptr<cudnn_frontend::graph::Graph>
buildSdpaGraph(const SdpaProblem &p, int smVersion = 0);

/// Builds `p`'s graph for `smVersion`, validates it and lowers it to
/// cuDNN's backend operation graph, with no device and no cuDNN handle: ""
/// if cuDNN accepts it, else cudnnRefusal's message with what cuDNN said.
/// Choosing an engine (the heuristics) needs the GPU: without one cuDNN
/// finds no engine configs.
std::string validateSdpaGraph(const SdpaProblem &p, int smVersion);

} // namespace titanrt::cuda

#endif // TITAN_HAVE_CUDNN_FRONTEND

#endif // TITANRT_CUDA_CUDNNGRAPHS_H
