//===- TargetBackend.h - targets as plug-ins, by name -----------*- C++ -*-===//
//
// Everything the compiler knows about a target, in one object registered by
// name (as LLVM's TargetRegistry holds its targets): the workspace rules of
// its kernels, the dtypes it computes in by default, how a lowered step
// becomes an object file, and what a training executable links for it. The
// dialects and the passes name no target: they are given a name and ask its
// backend. A new target is a TargetBackend subclass and one call to
// registerTargetBackend; no dialect file changes.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_TARGETBACKEND_H
#define TITAN_TARGET_TARGETBACKEND_H

#include "titan/Target/WorkspaceRules.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace titan::target {

/// The dtypes a target computes in unless the config says otherwise.
struct DtypePolicy {
  /// training.mixed_precision_param when the config leaves it unset, in
  /// TorchTitan's spelling: "float32" or "bfloat16".
  std::string defaultParamDtype = "float32";
  /// The target runs its 16-bit kernels on f32 copies of their buffers,
  /// which the memory plan then holds in each call's workspace
  /// (titan-bufferize's widen-low-precision).
  bool widenLowPrecision = false;
};

/// What a target's kernels and runtime can do, where the driver's checks,
/// the planner's search and the manifest differ between targets. The
/// defaults are a target that has none of them.
struct TargetFeatures {
  /// Its buffers are host memory and its ranks share the host's cores:
  /// FSDP2's CPU offload has nothing to move (a warning; on the others it
  /// moves the state to a host arena and runs the optimizer with this
  /// target's kernels, lookupHostTargetBackend), and it runs on the cost
  /// model's hardware whose ranks share compute
  /// (cost::Hardware::ranksShareCompute).
  bool hostMemory = false;
  /// Its float8 GEMMs run in hardware (cuBLASLt's FP8, with its shape
  /// rules), not emulated in f32: quantize.linear.float8.emulate is only
  /// warned about, and the planner tries Float8.
  bool float8Gemms = false;
  /// Its async tensor-parallel kernels overlap the ring's transfers with
  /// the GEMMs: the planner tries enable_async_tensor_parallel.
  bool asyncTensorParallel = false;
  /// Its runtime runs pipeline-parallel programs: an object or executable
  /// with pipeline_parallel_degree > 1 (otherwise only the kernel IR and
  /// the reports).
  bool pipelineParallel = false;
  /// Its attention kernels take document starts (TorchTitan's block-causal
  /// mask, attn_mask_type = "block_causal"); otherwise such a model is
  /// refused for the target.
  bool documentMaskedAttention = false;
  /// Its context-parallel attention kernels (context_attention(_grad))
  /// take them too; otherwise the mask is refused with context parallel.
  bool documentMaskedContextParallel = false;
  /// Its kernel library has code for chosen GPU architectures: an object
  /// or executable needs titan-compile's --cuda-arch to be one of them,
  /// and the manifest records it.
  bool deviceArch = false;
  /// Its lowering generates the pointwise ops' kernels from their scalar
  /// semantics (kernel.generic, fused by kernel-generate-pointwise) rather
  /// than calling its library's.
  bool generatedKernels = false;
  /// The row blocks a generated row kernel's column sums (a norm's weight
  /// gradient) split the rows into (kernel-generate-pointwise's
  /// column-sum-blocks): enough for its processors, each block's partials
  /// a row of the workspace.
  unsigned columnSumBlocks = 512;
};

/// What a target adds to a training executable's link; the driver adds
/// the objects, libtitanrt with its main() and its own flags.
struct TargetLink {
  /// The kernel libraries, linked before libtitanrt (which they call), in
  /// this order: `-l<name>` for a shared library in the runtime folder, or
  /// a file's path (a static archive carries its objects, GPU code
  /// included, into the executable).
  std::vector<std::string> kernelLibraries;
  /// Shared libraries linked after libtitanrt: what the kernel libraries
  /// need.
  std::vector<std::string> systemLibraries;
  /// Folders the executable searches at run time after its own folder and
  /// the runtime folder.
  std::vector<std::string> libraryDirs;
};

/// One target. Subclasses state their rules in their constructor
/// (getMutableWorkspaceRules().add<Op>(rule)) and say what they link.
class TargetBackend {
public:
  TargetBackend(llvm::StringRef name, llvm::StringRef description,
                DtypePolicy dtypes, TargetFeatures features = {});
  virtual ~TargetBackend();
  TargetBackend(const TargetBackend &) = delete;
  TargetBackend &operator=(const TargetBackend &) = delete;

  /// The name passes and tools take (`--target`, titan-bufferize's
  /// `target`).
  llvm::StringRef getName() const { return name; }
  /// One line for help texts: what the executable trains on.
  llvm::StringRef getDescription() const { return description; }
  const DtypePolicy &getDtypePolicy() const { return dtypes; }
  const TargetFeatures &getFeatures() const { return features; }

  /// The scratch memory this target's kernels need, per op.
  const WorkspaceRules &getWorkspaceRules() const { return workspaceRules; }
  /// Attaches this target's op models to the dialects in `registry`: by
  /// default the WorkspaceOpInterface model of each op with a rule.
  virtual void registerExternalModels(mlir::DialectRegistry &registry) const;
  /// Whether registerExternalModels' models are attached in `context`
  /// (without them every workspace would silently be planned as 0 bytes).
  virtual bool hasExternalModels(mlir::MLIRContext *context) const;

  /// Writes `module`, the lowering pipeline's output (LLVM-dialect calls
  /// into libtitanrt), as an object file at `path`. By default a
  /// relocatable object for the host, by the emitter setHostObjectEmitter
  /// set (an error if none is): the step runs on the host and calls the
  /// target's kernels.
  virtual llvm::Error emitObject(mlir::ModuleOp module,
                                 llvm::StringRef path) const;
  /// What a training executable links for this target, with libtitanrt
  /// and the kernel libraries built into `runtimeDir`.
  virtual TargetLink getTargetLink(llvm::StringRef runtimeDir) const = 0;

protected:
  WorkspaceRules &getMutableWorkspaceRules() { return workspaceRules; }

private:
  std::string name, description;
  DtypePolicy dtypes;
  TargetFeatures features;
  WorkspaceRules workspaceRules;
};

/// Writes a lowered module as a relocatable host object file.
using ObjectEmitter = llvm::Error (*)(mlir::ModuleOp module,
                                      llvm::StringRef path);

/// Sets the host object emission TargetBackend::emitObject uses by default,
/// for the whole process. It is registered, not linked, by the library with
/// LLVM's code generators (titan::registerHostObjectEmitter,
/// titan/Target/Host/ObjectFile.h), so that the registry and the tools that
/// only compile to IR (titan-opt) do not link them.
void setHostObjectEmitter(ObjectEmitter emitter);

/// Registers `backend` under its name, for the whole process; an error if
/// a backend has that name already. Register it before making the
/// DialectRegistry of the contexts that compile for it
/// (titan::registerAllDialects attaches the models of the backends
/// registered by then). The registry is safe to use from many threads.
llvm::Error registerTargetBackend(std::unique_ptr<TargetBackend> backend);

/// The backend registered as `name`, or null.
const TargetBackend *lookupTargetBackend(llvm::StringRef name);

/// The backend whose kernels run on the host (the first registered, by
/// name, with TargetFeatures::hostMemory), or null: it runs the host steps
/// of training.enable_cpu_offload on a GPU target.
const TargetBackend *lookupHostTargetBackend();

/// The registered backends' names, sorted.
std::vector<std::string> getTargetBackendNames();

/// The names as a diagnostic lists them: "cpu, cuda".
std::string getTargetBackendNameList();

/// Attaches every registered backend's external models to `registry`.
void registerTargetExternalModels(mlir::DialectRegistry &registry);

} // namespace titan::target

#endif // TITAN_TARGET_TARGETBACKEND_H
