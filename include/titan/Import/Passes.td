//===- Passes.td - the Llama plan's passes -----------------*- tablegen -*-===//

#ifndef TITAN_IMPORT_PASSES_TD
#define TITAN_IMPORT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TitanLlamaPlan : Pass<"titan-llama-plan", "::mlir::ModuleOp"> {
  let summary = "Attach TorchTitan's parallel plan for Llama to the forward";
  let description = [{
    Writes TorchTitan v0.2.0's `parallelize_llama` plan for the Llama
    function `forward` as the attributes `dist-parallelize` and
    `dist-partition` read (titan/Dialect/Dist/IR/DistPlan.h), matching
    parameter names as TorchTitan's `parallelize_module` matches modules.
    The Llama importer attaches the same plan; this pass attaches it to
    IR written by hand.

    * each parameter (`titan.param`) gets `dist.param_plan`: its
      tensor-parallel style (`wq`, `wk`, `wv`, `w1`, `w3` and `output`
      `colwise`, `wo` and `w2` `rowwise`, `tok_embeddings` `embedding`,
      norm weights `replicate`; none for a parameter outside the plan) and
      its transformer block (`layers.<i>`; none for the root's parameters:
      the embedding, the final norm and the output);
    * sequence parallel: the embedding and the linears of a row-wise
      weight (their `output_layouts=Shard(1)`) get
      `dist.sequence_parallel = 1`;
    * loss parallel: each `titan.cross_entropy` gets `dist.loss_parallel`;
    * context parallel: each input (`titan.input`: the tokens and labels)
      gets `dist.context_parallel` naming its last dimension, the
      sequence.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The model's forward function">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
}

def TitanLlamaPipelineStages
    : Pass<"titan-llama-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "Decide TorchTitan's pipeline stages for Llama";
  let description = [{
    TorchTitan v0.2.0's stage split (`pipeline_llm`,
    `generate_llm_fqn_per_model_part`, `pipeline_module_split`:
    lib/Model/PipelineStages.cpp) for the Llama function `forward` over
    the mesh's `pp` axis: the `L + first + last` effective layers split
    evenly, the remainder on the earliest stages; the stage count and the
    schedule's stages per rank checked as TorchTitan checks them. The
    layer count comes from the parameters (`layers.<i>.*`). The split is
    written as the module's `dist.pipeline` for `dist-pipeline-split`:
    `num_stages`, `stage_ranks` (the pipeline rank of each stage),
    `schedule`, `stage_modules` (each stage's modules: `tok_embeddings` on
    the first, `layers.<i>`, `norm`, `output` and the `loss` on the last)
    and `every_stage_modules` (`freqs_cis`, the RoPE angles, computed
    again in each stage). Errors: a split that does not fit the model,
    naming the config keys.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The per-rank forward function">,
    Option<"schedule", "schedule", "std::string", "\"1F1B\"",
           "parallelism.pipeline_parallel_schedule (how many stages each "
           "rank holds)">,
    Option<"layersPerStage", "layers-per-stage", "int64_t", "0",
           "parallelism.pipeline_parallel_layers_per_stage (0: unset)">,
    Option<"firstStageLessLayers", "first-stage-less-layers", "int64_t", "1",
           "parallelism.pipeline_parallel_first_stage_less_layers">,
    Option<"lastStageLessLayers", "last-stage-less-layers", "int64_t", "1",
           "parallelism.pipeline_parallel_last_stage_less_layers">,
  ];
  let dependentDialects = ["::titan::dist::DistDialect"];
}

#endif // TITAN_IMPORT_PASSES_TD
