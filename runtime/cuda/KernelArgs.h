//===- KernelArgs.h - what the CUDA entries decide on the host --*- C++ -*-===//
//
// The decisions KernelABI.cpp's entries make before they enqueue anything:
// the buffers' element types, the GEMM problems, the collective matmuls'
// ring and workspace offsets, attention's dimensions, the float8 operands
// and scales (the box copies' plans, shared with the CPU target, are
// BoxCopy.h's; the ring's, RingSchedule.h's). Pure functions of a call's
// shapes and ints, free of CUDA headers, so the CPU unit tests
// (unittests/Runtime/CudaKernelArgsTest.cpp) check them without a GPU. A
// decoding that can fail returns its message, which the entry stops on
// (kernelFatal).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_KERNELARGS_H
#define TITANRT_CUDA_KERNELARGS_H

#include "Communicator.h"
#include "KernelCall.h"
#include "RingSchedule.h"

#include "titan/Contract/CUDAWorkspaces.h"
#include "titanrt/KernelABI.h"

#include <cstdint>
#include <optional>
#include <string>

namespace titanrt::cuda {

/// The element type of a buffer of ABI type `code` (a call's `types`
/// entry) where a CUDA kernel takes it: f32, bf16, f16 or a float8 type
/// (f64 kernels exist only on the CPU target; integer buffers are typed by
/// their kernel). Collectives move each as itself (a float8 shard is not an
/// f16 one).
constexpr std::optional<Dtype> cudaDtype(int64_t code) {
  std::optional<Dtype> type = titan::dtypeFromCode(code);
  if (!type || *type == Dtype::f64 || *type == Dtype::i32 ||
      *type == Dtype::i64)
    return std::nullopt;
  return type;
}

/// A GEMM of titan.linear's family: result m x n, reducing over k, with
/// the weight [n, k] (LinearGemm.h's GemmProblem).
struct GemmDims {
  int64_t m, k, n;
};
/// titan.linear: x [..., k], w [n, k] -> y [..., n].
inline GemmDims linearDims(abi::Shape x, abi::Shape w) {
  return {x.rows(), x.back(), w.dim(0)};
}
/// titan.linear_grad_input: dy [..., n], w [n, k] -> dx [..., k].
inline GemmDims linearGradInputDims(abi::Shape dy, abi::Shape w) {
  return {dy.rows(), w.dim(1), w.dim(0)};
}
/// titan.linear_grad_weight: dy [..., n], x [..., k] -> dw [n, k].
inline GemmDims linearGradWeightDims(abi::Shape dy, abi::Shape x) {
  return {dy.rows(), x.back(), dy.back()};
}
/// One GEMM of a collective matmul on `rows` rows: lhs [rows, in] times the
/// weight, as titan.linear (weight [out, in]) or, `gradInput`,
/// titan.linear_grad_input (weight [in, out]), to [rows, out].
constexpr GemmDims ringGemmDims(bool gradInput, int64_t rows, int64_t in,
                                int64_t out) {
  return {rows, gradInput ? out : in, gradInput ? in : out};
}

/// dist.all_gather_linear's workspace: cuBLASLt's, then the two buffers the
/// shards arrive in (RingSchedule.h), each the whole input (`outer` shards
/// of `shardBytes`). Offsets from the workspace's start.
struct AllGatherLinearCarve {
  int64_t shardBytes;
  int64_t incoming[2];
  int64_t end;
};
constexpr AllGatherLinearCarve carveAllGatherLinear(RingLayout l, int64_t in,
                                                    int64_t elementBytes) {
  int64_t shard = l.rows * in * elementBytes, input = l.outer * shard;
  return {shard,
          {titan::cuda::collectiveMatmulShard(0, input),
           titan::cuda::collectiveMatmulShard(1, input)},
          titan::cuda::collectiveMatmulWorkspaceBytes(2, input)};
}
/// dist.linear_reduce_scatter's: cuBLASLt's, then two partial sums and the
/// one received, each the whole result (`shardElements`).
struct LinearReduceScatterCarve {
  int64_t shardElements;
  int64_t partials[2];
  int64_t received;
  int64_t end;
};
constexpr LinearReduceScatterCarve
carveLinearReduceScatter(RingLayout l, int64_t out, int64_t elementBytes) {
  int64_t elements = l.outer * l.rows * out, bytes = elements * elementBytes;
  return {elements,
          {titan::cuda::collectiveMatmulShard(0, bytes),
           titan::cuda::collectiveMatmulShard(1, bytes)},
          titan::cuda::collectiveMatmulShard(2, bytes),
          titan::cuda::collectiveMatmulWorkspaceBytes(3, bytes)};
}

/// Float8's collective matmuls: the scaled GEMM's scratch (`gemmBytes`,
/// titan::cuda::scaledRingGemmBytes) at the start, then `shards` buffers
/// of `shardBytes` (the gather's float8 shards, the reduce-scatter's
/// partial sums and the one received).
struct ScaledRingCarve {
  int64_t shard[3];
  int64_t end;
};
constexpr ScaledRingCarve carveScaledRing(int64_t gemmBytes, int64_t shards,
                                          int64_t shardBytes) {
  return {{titan::cuda::collectiveMatmulShard(0, shardBytes, gemmBytes),
           titan::cuda::collectiveMatmulShard(1, shardBytes, gemmBytes),
           titan::cuda::collectiveMatmulShard(2, shardBytes, gemmBytes)},
          titan::cuda::collectiveMatmulWorkspaceBytes(shards, shardBytes,
                                                      gemmBytes)};
}

/// Attention's operands: q B x S x Hq x D, k and v B x Skv x Hkv x D.
struct AttentionDims {
  int64_t batch = 0, seq = 0, qHeads = 0, kvHeads = 0, headDim = 0;
  std::string error;
};
inline AttentionDims attentionDims(abi::Shape q, abi::Shape kv) {
  AttentionDims d;
  if (q.rank != 4 || kv.rank != 4) {
    d.error = "attention: q of rank " + std::to_string(q.rank) +
              " and k/v of rank " + std::to_string(kv.rank) +
              " (B x S x H x D, rank 4)";
    return d;
  }
  d = {q.dim(0), q.dim(1), q.dim(2), kv.dim(2), q.dim(3), ""};
  // GQA: query head h reads kv head h / (Hq / Hkv).
  if (kv.dim(0) != d.batch || kv.dim(3) != d.headDim || d.kvHeads < 1 ||
      d.qHeads % d.kvHeads != 0)
    d.error = "attention: q [" + std::to_string(d.batch) + ", " +
              std::to_string(d.seq) + ", " + std::to_string(d.qHeads) + ", " +
              std::to_string(d.headDim) + "] and k/v with " +
              std::to_string(kv.dim(2)) + " heads of " +
              std::to_string(kv.dim(3)) + " in a batch of " +
              std::to_string(kv.dim(0)) + " (the same batch and head size, " +
              "a number of heads dividing q's)";
  return d;
}

/// How a float8 scale applies, from its shape: one for the tensor, one per
/// row ([..., 1]) or one per column.
constexpr int kScaleTensorwise = 0, kScalePerRow = 1, kScalePerColumn = 2;
inline int scaleMode(abi::Shape scale) {
  if (scale.numel() <= 1)
    return kScaleTensorwise;
  return scale.back() == 1 ? kScalePerRow : kScalePerColumn;
}

/// A scaled GEMM's float8 operand as the matrix it holds (a `transposed`
/// one, its last dimension first, as the matrix it was) and whether its
/// scale is a vector (one per result row or column) or one value.
struct ScaledOperandDims {
  int64_t rows, cols;
  bool vectorScales;
};
inline ScaledOperandDims scaledOperandDims(abi::Shape operand, abi::Shape scale,
                                           bool transposed) {
  abi::Shape::Matrix m = operand.matrix(transposed);
  return {m.rows, m.cols, scale.numel() > 1};
}

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_KERNELARGS_H
