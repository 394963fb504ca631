//===- CudnnGraphs.cpp - the cuDNN SDPA graphs titan builds ---------------===//
//
// cuDNN's tensors are always (batch, heads, seq, dim) with strides, so
// titan's B x S x H x D buffers are described by their strides and no
// transposes run; so are context parallel's chunks, views into them. The
// forward's softmax statistics ("Stats": the natural log-sum-exp of each
// scaled score row, f32, B x H x S x 1) are exactly titan.attention's lse,
// which the backward takes back.
//
//===----------------------------------------------------------------------===//

#include "CudnnGraphs.h"

using namespace titanrt;
using namespace titanrt::cuda;

std::string titanrt::cuda::describe(const SdpaProblem &p) {
  auto n = [](int64_t v) { return std::to_string(v); };
  const AttentionShape &s = p.shape;
  const SdpaViews &views = p.views;
  std::string text =
      std::string("the flash-attention ") +
      (p.backward ? (p.deterministic ? "backward (deterministic)" : "backward")
                  : "forward") +
      " of B " + n(s.batch) + " S " + n(s.seq) + " Hq " + n(s.qHeads) +
      " Hkv " + n(s.kvHeads) + " D " + n(s.headDim) + " " + dtypeName(p.type);
  if (views.queryRows != s.seq || views.keyRows != s.seq)
    text += " (views into " + n(views.queryRows) + " query rows and " +
            n(views.keyRows) + " key rows)";
  if (!views.causal)
    text += ", unmasked";
  if (p.documents)
    text += ", block-causal by document";
  return text;
}

std::string titanrt::cuda::cudnnRefusal(const SdpaProblem &p,
                                        const std::string &why) {
  return "cuDNN cannot run " + describe(p) + ": " + why;
}

std::vector<ContextPair>
titanrt::cuda::contextAttentionPairs(const AttentionShape &s,
                                     const ChunkLayout &layout, bool backward) {
  int64_t c = layout.chunk, keySeq = layout.keySeq();
  std::vector<ContextPair> pairs;
  bool queryWritten[ChunkLayout::kMaxQueryChunks] = {};
  bool keyWritten[ChunkLayout::kMaxKeyChunks] = {};
  auto visit = [&](int64_t qc, int64_t kc) {
    if (layout.keyStarts[kc] > layout.queryStarts[qc])
      return;
    bool partialQuery = queryWritten[qc];
    bool partialKey = backward && keyWritten[kc];
    bool causal = layout.keyStarts[kc] == layout.queryStarts[qc];
    // The forward reads and writes whole buffers' rows or a partial's c.
    // The backward reads O and dO in place but the lse packed (c rows: cuDNN
    // before 9.26 takes no strided Stats in the backward), and writes
    // partial gradients only where a chunk's gradient is already written.
    SdpaViews views = backward ? SdpaViews{s.seq,
                                           keySeq,
                                           s.seq,
                                           c,
                                           partialQuery ? c : s.seq,
                                           partialKey ? c : keySeq,
                                           causal}
                               : SdpaViews{s.seq,
                                           keySeq,
                                           partialQuery ? c : s.seq,
                                           partialQuery ? c : s.seq,
                                           0,
                                           0,
                                           causal};
    pairs.push_back({qc, kc, views, partialQuery, partialKey});
    queryWritten[qc] = keyWritten[kc] = true;
  };
  // The backward goes key chunk by key chunk, as ring attention's
  // arriving K/V do; the forward query chunk by query chunk.
  if (backward) {
    for (int64_t kc = 0; kc < layout.keyChunks; ++kc)
      for (int64_t qc = 0; qc < layout.queryChunks; ++qc)
        visit(qc, kc);
  } else {
    for (int64_t qc = 0; qc < layout.queryChunks; ++qc)
      for (int64_t kc = 0; kc < layout.keyChunks; ++kc)
        visit(qc, kc);
  }
  return pairs;
}

#ifdef TITAN_HAVE_CUDNN_FRONTEND

namespace fe = cudnn_frontend;

namespace {

/// titan's layout as cuDNN's (B, H, S, D) dims and strides: s.seq rows of
/// a buffer whose batches are `rows` rows apart.
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
std::vector<int64_t> statsDims(const AttentionShape &s) {
  return {s.batch, s.qHeads, s.seq, 1};
}
std::vector<int64_t> statsStrides(const AttentionShape &s, int64_t rows) {
  return {s.qHeads * rows, rows, 1, 1};
}

/// The graph's Q, K and V inputs, on `p`'s views.
struct Inputs {
  std::shared_ptr<fe::graph::Tensor_attributes> q, k, v;
};
Inputs addInputs(fe::graph::Graph &g, const SdpaProblem &p) {
  const AttentionShape &s = p.shape;
  const SdpaViews &views = p.views;
  return {g.tensor(bshd("Q", Q, s, s.qHeads, views.queryRows)),
          g.tensor(bshd("K", K, s, s.kvHeads, views.keyRows)),
          g.tensor(bshd("V", V, s, s.kvHeads, views.keyRows))};
}

/// The block-causal mask's graph inputs: the starts from the problem's
/// first query row on (one per row, broadcast over heads and key columns;
/// rows p.documentSeq apart per batch) and the global positions of its
/// first query and key rows, passed by value so that context parallel's
/// chunk pairs share their graphs.
struct DocumentInputs {
  std::shared_ptr<fe::graph::Tensor_attributes> starts, queryOffset, keyOffset;
};
DocumentInputs addDocumentInputs(fe::graph::Graph &g, const SdpaProblem &p) {
  const AttentionShape &s = p.shape;
  auto offset = [&](const char *name, int64_t uid) {
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, 1, 1, 1})
                        .set_stride({1, 1, 1, 1})
                        .set_data_type(fe::DataType_t::INT32)
                        .set_is_pass_by_value(true));
  };
  return {g.tensor(fe::graph::Tensor_attributes()
                       .set_name("document_starts")
                       .set_uid(DocumentStarts)
                       .set_dim({s.batch, 1, s.seq, 1})
                       .set_stride({p.documentSeq, p.documentSeq, 1, 1})
                       .set_data_type(fe::DataType_t::INT32)
                       // A chunk pair's starts begin at its first query's
                       // position: only 4-byte aligned in general.
                       .set_alignment(4)),
          offset("query_offset", QueryOffset), offset("key_offset", KeyOffset)};
}

/// TorchTitan's block-causal mask as cuDNN's score modifier, which stands
/// in for cuDNN's own masks (it takes no causal mask beside one): with
/// query row i at global position p = i + queryOffset and key column j at
/// k = j + keyOffset, the score is kept when starts[b, p] <= k <= p.
auto documentMask(DocumentInputs in) {
  return [in](std::shared_ptr<fe::graph::Graph> g,
              std::shared_ptr<fe::graph::Tensor_attributes> score) {
    auto op = [](const char *name, fe::PointwiseMode_t mode,
                 fe::DataType_t compute) {
      return fe::graph::Pointwise_attributes()
          .set_name(name)
          .set_mode(mode)
          .set_compute_data_type(compute);
    };
    auto position = [&](const char *name, const char *shifted, int64_t axis,
                        std::shared_ptr<fe::graph::Tensor_attributes> offset) {
      auto index = g->pointwise(
          score, op(name, fe::PointwiseMode_t::GEN_INDEX, fe::DataType_t::INT32)
                     .set_axis(axis));
      index->set_data_type(fe::DataType_t::INT32);
      auto t = g->pointwise(
          index, offset,
          op(shifted, fe::PointwiseMode_t::ADD, fe::DataType_t::INT32));
      t->set_data_type(fe::DataType_t::INT32);
      return t;
    };
    auto compare = [&](const char *name, auto a, auto b,
                       fe::PointwiseMode_t mode) {
      auto t = g->pointwise(a, b, op(name, mode, fe::DataType_t::BOOLEAN));
      t->set_data_type(fe::DataType_t::BOOLEAN);
      return t;
    };
    auto row =
        position("document_row", "document_query_position", 2, in.queryOffset);
    auto col =
        position("document_col", "document_key_position", 3, in.keyOffset);
    auto causal =
        compare("document_causal", col, row, fe::PointwiseMode_t::CMP_LE);
    auto inDocument =
        compare("document_start", col, in.starts, fe::PointwiseMode_t::CMP_GE);
    auto visible = compare("document_visible", causal, inDocument,
                           fe::PointwiseMode_t::LOGICAL_AND);
    auto masked = std::make_shared<fe::graph::Tensor_attributes>(
        fe::graph::attn::score_modifiers::get_negative_inf_value());
    return g->pointwise(score, masked, visible,
                        fe::graph::Pointwise_attributes()
                            .set_name("document_select")
                            .set_mode(fe::PointwiseMode_t::BINARY_SELECT));
  };
}

void addForward(fe::graph::Graph &g, const SdpaProblem &p) {
  const AttentionShape &s = p.shape;
  const SdpaViews &views = p.views;
  auto [q, k, v] = addInputs(g, p);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("titan.attention")
                     .set_generate_stats(true)
                     .set_attn_scale(float(p.scale));
  if (p.documents)
    options.set_score_mod(documentMask(addDocumentInputs(g, p)));
  else
    options.set_causal_mask(views.causal);
  auto [o, lse] = g.sdpa(q, k, v, options);
  o->set_output(true)
      .set_uid(O)
      .set_dim(bshdDims(s, s.qHeads))
      .set_stride(bshdStrides(s, s.qHeads, views.outRows));
  lse->set_output(true)
      .set_uid(Stats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim(statsDims(s))
      .set_stride(statsStrides(s, views.lseRows));
}

void addBackward(fe::graph::Graph &g, const SdpaProblem &p) {
  const AttentionShape &s = p.shape;
  const SdpaViews &views = p.views;
  auto [q, k, v] = addInputs(g, p);
  auto o = g.tensor(bshd("O", O, s, s.qHeads, views.outRows));
  auto dO = g.tensor(bshd("dO", DO, s, s.qHeads, views.outRows));
  auto lse = g.tensor(fe::graph::Tensor_attributes()
                          .set_name("Stats")
                          .set_uid(Stats)
                          .set_dim(statsDims(s))
                          .set_stride(statsStrides(s, views.lseRows))
                          .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("titan.attention_grad")
                     .set_attn_scale(float(p.scale))
                     .set_deterministic_algorithm(p.deterministic);
  // Masked entries have probability 0, so their score gradient is 0: the
  // mask needs no backward modifier of its own.
  if (p.documents)
    options.set_score_mod(documentMask(addDocumentInputs(g, p)));
  else
    options.set_causal_mask(views.causal);
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

} // namespace

std::shared_ptr<fe::graph::Graph>
titanrt::cuda::buildSdpaGraph(const SdpaProblem &p, int smVersion) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(p.type == Dtype::bf16 ? fe::DataType_t::BFLOAT16
                                            : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  // Before the nodes: each node keeps a copy of the graph's context.
  if (smVersion > 0)
    g->set_sm_version(smVersion);
  if (p.backward)
    addBackward(*g, p);
  else
    addForward(*g, p);
  return g;
}

std::string titanrt::cuda::validateSdpaGraph(const SdpaProblem &p,
                                             int smVersion) {
  auto g = buildSdpaGraph(p, smVersion);
  fe::error_t e = g->validate();
  if (e.is_good())
    e = g->build_operation_graph(nullptr);
  return e.is_good() ? std::string()
                     : cudnnRefusal(p, "cuDNN says: " + e.get_message());
}

#endif // TITAN_HAVE_CUDNN_FRONTEND
