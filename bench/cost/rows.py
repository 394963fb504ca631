"""The published training rows the cost model is validated against.

Each row: the model (titan's preset models/llama3/train_configs/
llama3_<size>.toml, which mirrors TorchTitan's), the GPU count, the
titan-compile overrides (TorchTitan keys) that reproduce the published
configuration, the hardware description to predict on, the published
tokens/s/GPU and memory, and where each number and setting comes from.

Sources
- TT: TorchTitan's benchmarks/llama3_h100_202412_torchtitan.md (tables 1-6;
  H100 96 GB HBM2e at 500 W, 8 per host, 400 Gb/s per GPU; torchtitan
  9dec370, 2024-12-26). Its configuration at that commit (train_configs/
  llama3_*.toml, torchtitan/parallelisms/pipelining_utils.py): the pipeline
  runs pipeline_parallel_degree microbatches (n_microbatches defaults to the
  pp degree), Interleaved 1F1B runs 2 stages per rank (titan's default for
  looped schedules), Float8 is torchao's tensorwise dynamic scaling, with
  docs/float8.md's --float8.enable_fsdp_float8_all_gather and
  --float8.precompute_float8_dynamic_scale_for_fsdp (the 405B config sets
  both; for the 8B and 70B rows the file does not say: assumed as
  docs/float8.md launches it). Memory is max *reserved* over all GPUs.
- MB: Megatron-Bridge docs/performance-summary.md, 25.11 NeMo container,
  DGX-H100 (80 GB, 700 W), FP8-CS (current scaling, per tensor: torchao's
  tensorwise recipe): GBS, MBS, FSDP, TP, PP, CP, VP, GA from the table.
  Megatron's distributed optimizer (FSDP = 0) shards optimizer state over
  DP like FSDP's dp_shard; titan has no ZeRO-1, so those rows use dp_shard.
  Megatron's recompute is not in the table: selective assumed.
- NEMO: the NeMo 2.0 H100 BF16 rows in /work/shared/reference/
  published-performance.md (8B 10,153 and FP8 13,555 on 8; 70B 1,113 on 64;
  405B 208 on 576). Their parallel layout is not in a stored source: the
  8B and 70B layouts are NeMo 24.07's LLAMA3 rows (docs/source/performance/
  performance_summary.md: 8B TP1 PP1 CP2 GBS 128 MBS 1; 70B TP4 PP4 CP2 VP5
  GBS 128 MBS 1), the 405B one (TP8 PP9 CP2 VP7, GBS 252, MBS 1) is
  ASSUMED. Their rows are marked "assumed layout".
"""

# The three presets' Llama 3.1 shapes (models/llama3/{8B,70B,405B}.toml),
# for TorchTitan's MFU count (torchtitan/models/utils.py v0.2.0).
MODELS = {
    "8b": dict(dim=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
               vocab=128256),
    "70b": dict(dim=8192, layers=80, heads=64, kv_heads=8, ffn=28672,
                vocab=128256),
    "405b": dict(dim=16384, layers=126, heads=128, kv_heads=8, ffn=53248,
                 vocab=128256),
}

TT_SRC = "TorchTitan llama3_h100_202412 table {}"
MB_SRC = "Megatron-Bridge 25.11 perf summary, DGX-H100"
NEMO_SRC = "NeMo 2.0 H100 (published-performance.md)"

# TorchTitan's settings that several rows share.
COMPILE = {"compile.enable": "true"}
FLOAT8 = {
    "model.converters": "float8",
    "quantize.linear.float8.enable_fsdp_float8_all_gather": "true",
    "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp": "true",
}
ASYNC_TP = {"parallelism.enable_async_tensor_parallel": "true"}
# No Float8 (the 405B preset converts by default).
BF16 = {"model.converters": ""}


def mesh(dp_shard=1, tp=1, pp=1, cp=1, dp_replicate=1):
    return {
        "parallelism.data_parallel_replicate_degree": str(dp_replicate),
        "parallelism.data_parallel_shard_degree": str(dp_shard),
        "parallelism.tensor_parallel_degree": str(tp),
        "parallelism.pipeline_parallel_degree": str(pp),
        "parallelism.context_parallel_degree": str(cp),
    }


def training(local, seq, ac, global_batch=None):
    o = {
        "training.local_batch_size": str(local),
        "training.seq_len": str(seq),
        "activation_checkpoint.mode": ac,
    }
    if global_batch is not None:
        o["training.global_batch_size"] = str(global_batch)
    return o


def row(id, model, gpus, overrides, tps, mem, source, config, gpu="h100-96gb",
        assumed=""):
    return dict(id=id, model=model, gpus=gpus, overrides=overrides,
                published_tps=tps, published_mem_gib=mem, source=source,
                config=config, gpu=gpu, assumed=assumed)


def _rows():
    rows = []
    # Tables 1 and 3: 8B FSDP, local batch 2, selective (op) AC.
    for table, gpus, published in (
            (1, 8, ((5762, 82.4), (6667, 77.0), (8532, 76.8))),
            (3, 128, ((5605, 67.0), (6514, 62.0), (8380, 61.8)))):
        base = {**mesh(dp_shard=gpus), **training(2, 8192, "selective")}
        variants = (("eager", f"FSDP {gpus}, eager",
                     {"compile.enable": "false", **BF16}),
                    ("compile", f"FSDP {gpus} + compile", {**COMPILE, **BF16}),
                    ("float8", f"FSDP {gpus} + compile + Float8",
                     {**COMPILE, **FLOAT8}))
        for (name, config, extra), (tps, mem) in zip(variants, published):
            rows.append(row(f"tt-8b-{gpus}-{name}", "8b", gpus,
                            {**base, **extra}, tps, mem,
                            TT_SRC.format(table),
                            f"{config}, lbs 2, seq 8K, sel. AC"))
    # Table 2: 8B on 8 GPUs, FSDP x CP, local batch 1, full AC.
    for fsdp, cp, seq, tps, mem in ((8, 1, 32768, 3890, 83.9),
                                    (4, 2, 65536, 2540, 84.2),
                                    (2, 4, 131072, 1071, 84.0),
                                    (1, 8, 262144, 548, 84.5)):
        rows.append(row(
            f"tt-8b-8-cp{cp}-{seq // 1024}k", "8b", 8,
            {**mesh(dp_shard=fsdp, cp=cp), **training(1, seq, "full"),
             **COMPILE, **FLOAT8},
            tps, mem, TT_SRC.format(2),
            f"FSDP {fsdp} x CP {cp}, seq {seq // 1024}K, lbs 1, full AC, "
            "compile + Float8"))
    # Table 4: 70B on 256, FSDP 32 x TP 8, local batch 16, full AC.
    for name, extra, tps, mem in (("2d", {}, 829, 71.9),
                                  ("2d-asynctp", ASYNC_TP, 876, 67.6)):
        rows.append(row(
            f"tt-70b-256-{name}", "70b", 256,
            {**mesh(dp_shard=32, tp=8), **training(16, 8192, "full"),
             **COMPILE, **FLOAT8, **extra},
            tps, mem, TT_SRC.format(4),
            "FSDP 32 x TP 8, lbs 16, full AC, compile + Float8"
            + (" + async TP" if extra else "")))
    # Table 5: 405B on 512, FSDP 8 x TP 8 x PP 8, local batch 32 in 8
    # microbatches of 4 (n_microbatches = pp degree at 9dec370).
    for name, schedule, tps, mem in (("1f1b", "1F1B", 100, 82.5),
                                     ("i1f1b", "Interleaved1F1B", 128, 72.7)):
        rows.append(row(
            f"tt-405b-512-{name}", "405b", 512,
            {**mesh(dp_shard=8, tp=8, pp=8), **training(32, 8192, "full"),
             "parallelism.pipeline_parallel_schedule": schedule,
             "parallelism.pipeline_parallel_microbatch_size": "4",
             **COMPILE, **FLOAT8, **ASYNC_TP},
            tps, mem, TT_SRC.format(5),
            f"FSDP 8 x TP 8 x PP 8 {schedule}, lbs 32 (8 x mbs 4), full AC, "
            "compile + Float8 + async TP"))
    # Table 6: 405B on 512, TP 8 x PP 8 1F1B with FSDP x CP, local batch 8
    # in 8 microbatches of 1.
    for fsdp, cp, seq, tps, mem in ((8, 1, 32768, 76, 75.3),
                                    (4, 2, 65536, 47, 75.9),
                                    (2, 4, 131072, 31, 77.1),
                                    (1, 8, 262144, 16, 84.9)):
        rows.append(row(
            f"tt-405b-512-cp{cp}-{seq // 1024}k", "405b", 512,
            {**mesh(dp_shard=fsdp, tp=8, pp=8, cp=cp),
             **training(8, seq, "full"),
             "parallelism.pipeline_parallel_schedule": "1F1B",
             "parallelism.pipeline_parallel_microbatch_size": "1",
             **COMPILE, **FLOAT8, **ASYNC_TP},
            tps, mem, TT_SRC.format(6),
            f"FSDP {fsdp} x CP {cp} x TP 8 x PP 8 1F1B, seq {seq // 1024}K, "
            "lbs 8 (mbs 1), full AC, compile + Float8 + async TP"))

    # Megatron and NeMo overlap the tp collectives with the GEMMs (TE
    # userbuffers) wherever tp > 1: Megatron-Bridge's performance scripts
    # map llama3_70b on h100 to userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192
    # (bf16: ..._bf16_...) and llama31_405b to
    # userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192
    # (COMM_OVERLAP_CONFIG_MAP); those rows run titan's async TP.
    # Megatron-Bridge 25.11, DGX-H100, FP8-CS.
    # Current scaling = torchao's tensorwise (recipe_name unset); weights
    # gathered in bf16 (titan's Float8 all-gather is FSDP's, which these
    # layouts mostly do not use).
    fp8cs = {**COMPILE, "model.converters": "float8",
             "quantize.linear.float8.recipe_name": "",
             "quantize.linear.float8.enable_fsdp_float8_all_gather": "false",
             "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp":
             "false"}
    rows.append(row(
        "mb-8b-8-fp8", "8b", 8,
        {**mesh(dp_shard=8), **training(1, 8192, "selective", 128), **fp8cs},
        14451, None, MB_SRC,
        "FSDP 8, GBS 128, MBS 1 (GA 16), FP8-CS", gpu="h100",
        assumed="AC"))
    rows.append(row(
        "mb-70b-64-fp8", "70b", 64,
        {**mesh(dp_shard=2, tp=4, pp=8), **training(64, 8192, "selective",
                                                    128),
         "parallelism.pipeline_parallel_schedule": "Interleaved1F1B",
         "parallelism.pipeline_parallel_microbatch_size": "1",
         # VP 5: 40 virtual stages of 2 layers, embedding and head not
         # counted as layers (Megatron's split).
         "parallelism.pipeline_parallel_layers_per_stage": "2",
         "parallelism.pipeline_parallel_first_stage_less_layers": "0",
         "parallelism.pipeline_parallel_last_stage_less_layers": "0",
         **fp8cs, **ASYNC_TP},
        1602, None, MB_SRC,
        "DP 2 x TP 4 x PP 8 VP 5, GBS 128, MBS 1 (GA 64), FP8-CS",
        gpu="h100", assumed="AC; distributed optimizer as dp_shard"))
    rows.append(row(
        "mb-405b-1024-fp8", "405b", 1024,
        {**mesh(dp_shard=8, tp=8, pp=8, cp=2),
         **training(64, 8192, "selective", 512),
         "parallelism.pipeline_parallel_schedule": "Interleaved1F1B",
         "parallelism.pipeline_parallel_microbatch_size": "1",
         # VP 8: 64 virtual stages of 2 (126 layers + embedding + head).
         "parallelism.pipeline_parallel_layers_per_stage": "2",
         **fp8cs, **ASYNC_TP},
        292, None, MB_SRC,
        "DP 8 x CP 2 x TP 8 x PP 8 VP 8, GBS 512, MBS 1 (GA 64), FP8-CS",
        gpu="h100", assumed="AC; distributed optimizer as dp_shard"))

    # NeMo 2.0 H100 rows (BF16, and the 8B's FP8).
    nemo8 = {**mesh(dp_shard=4, cp=2), **training(1, 8192, "selective", 128),
             **COMPILE, **BF16}
    rows.append(row("nemo-8b-8-bf16", "8b", 8, nemo8, 10153, None, NEMO_SRC,
                    "DP 4 x CP 2, GBS 128, MBS 1, BF16", gpu="h100",
                    assumed="layout (NeMo 24.07's), AC"))
    rows.append(row("nemo-8b-8-fp8", "8b", 8,
                    {**nemo8, **fp8cs},
                    13555, None, NEMO_SRC,
                    "DP 4 x CP 2, GBS 128, MBS 1, FP8", gpu="h100",
                    assumed="layout (NeMo 24.07's), AC"))
    rows.append(row(
        "nemo-70b-64-bf16", "70b", 64,
        {**mesh(dp_shard=2, cp=2, tp=4, pp=4),
         **training(64, 8192, "selective", 128),
         "parallelism.pipeline_parallel_schedule": "Interleaved1F1B",
         "parallelism.pipeline_parallel_microbatch_size": "1",
         # VP 5: 20 virtual stages of 4 layers.
         "parallelism.pipeline_parallel_layers_per_stage": "4",
         "parallelism.pipeline_parallel_first_stage_less_layers": "0",
         "parallelism.pipeline_parallel_last_stage_less_layers": "0",
         **COMPILE, **BF16, **ASYNC_TP},
        1113, None, NEMO_SRC,
        "DP 2 x CP 2 x TP 4 x PP 4 VP 5, GBS 128, MBS 1, BF16", gpu="h100",
        assumed="layout (NeMo 24.07's), AC"))
    rows.append(row(
        "nemo-405b-576-bf16", "405b", 576,
        {**mesh(dp_shard=4, cp=2, tp=8, pp=9),
         **training(63, 8192, "selective", 252),
         "parallelism.pipeline_parallel_schedule": "Interleaved1F1B",
         "parallelism.pipeline_parallel_microbatch_size": "1",
         # VP 7: 63 virtual stages of 2 layers.
         "parallelism.pipeline_parallel_layers_per_stage": "2",
         "parallelism.pipeline_parallel_first_stage_less_layers": "0",
         "parallelism.pipeline_parallel_last_stage_less_layers": "0",
         **COMPILE, **BF16, **ASYNC_TP},
        208, None, NEMO_SRC,
        "DP 4 x CP 2 x TP 8 x PP 9 VP 7, GBS 252, MBS 1, BF16", gpu="h100",
        assumed="layout (TP8 PP9 CP2 VP7, not in a stored source), AC"))
    return rows


ROWS = _rows()


def flops_per_token(model, seq):
    """TorchTitan's count (torchtitan/models/utils.py v0.2.0):
    6 (N - N_embedding) + 12 L H Q T, N without the embedding table (the
    output projection counts)."""
    m = MODELS[model]
    dim, layers, heads = m["dim"], m["layers"], m["heads"]
    head_dim = dim // heads
    kv = m["kv_heads"] * head_dim
    per_layer = (dim * dim * 2 + dim * kv * 2  # wq, wo, wk, wv
                 + 3 * dim * m["ffn"]  # w1, w2, w3
                 + 2 * dim)  # the two RMSNorm weights
    non_embedding = layers * per_layer + dim + dim * m["vocab"]
    return 6 * non_embedding + 12 * layers * heads * head_dim * seq
