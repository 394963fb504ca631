//===- TargetBackend.cpp - the target backends' registry ------------------===//

#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/RWMutex.h"

#include <atomic>

using namespace titan;
using namespace titan::target;

TargetBackend::TargetBackend(llvm::StringRef name, llvm::StringRef description,
                             DtypePolicy dtypes, TargetFeatures features)
    : name(name), description(description), dtypes(std::move(dtypes)),
      features(features) {}

TargetBackend::~TargetBackend() = default;

void TargetBackend::registerExternalModels(
    mlir::DialectRegistry &registry) const {
  workspaceRules.registerModels(registry);
}

bool TargetBackend::hasExternalModels(mlir::MLIRContext *context) const {
  return workspaceRules.hasModels(context);
}

namespace {
std::atomic<ObjectEmitter> hostObjectEmitter{nullptr};
} // namespace

void titan::target::setHostObjectEmitter(ObjectEmitter emitter) {
  hostObjectEmitter.store(emitter);
}

llvm::Error TargetBackend::emitObject(mlir::ModuleOp module,
                                      llvm::StringRef path) const {
  if (ObjectEmitter emit = hostObjectEmitter.load())
    return emit(module, path);
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "target '" + name +
          "': this program writes no object files (no host object emitter "
          "is registered: titan::registerHostObjectEmitter)");
}

namespace {
/// The process's backends. Lookups (from passes, on any thread) take the
/// lock shared.
struct Registry {
  llvm::sys::SmartRWMutex<true> mutex;
  llvm::StringMap<std::unique_ptr<TargetBackend>> backends;
};

Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

llvm::Error
titan::target::registerTargetBackend(std::unique_ptr<TargetBackend> backend) {
  Registry &registry = getRegistry();
  llvm::sys::SmartScopedWriter<true> lock(registry.mutex);
  std::string name = backend->getName().str();
  if (!registry.backends.try_emplace(name, std::move(backend)).second)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "a target backend named '" + name +
                                       "' is registered already");
  return llvm::Error::success();
}

const TargetBackend *titan::target::lookupTargetBackend(llvm::StringRef name) {
  Registry &registry = getRegistry();
  llvm::sys::SmartScopedReader<true> lock(registry.mutex);
  auto it = registry.backends.find(name);
  return it == registry.backends.end() ? nullptr : it->second.get();
}

const TargetBackend *titan::target::lookupHostTargetBackend() {
  for (const std::string &name : getTargetBackendNames())
    if (const TargetBackend *backend = lookupTargetBackend(name);
        backend->getFeatures().hostMemory)
      return backend;
  return nullptr;
}

std::vector<std::string> titan::target::getTargetBackendNames() {
  Registry &registry = getRegistry();
  llvm::sys::SmartScopedReader<true> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto &entry : registry.backends)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

std::string titan::target::getTargetBackendNameList() {
  return llvm::join(getTargetBackendNames(), ", ");
}

void titan::target::registerTargetExternalModels(
    mlir::DialectRegistry &registry) {
  for (const std::string &name : getTargetBackendNames())
    lookupTargetBackend(name)->registerExternalModels(registry);
}
