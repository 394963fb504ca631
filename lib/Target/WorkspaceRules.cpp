//===- WorkspaceRules.cpp - a target's kernel workspaces, per op ----------===//

#include "titan/Target/WorkspaceRules.h"

#include "titan/Dialect/Titan/IR/KernelInterface.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;
using namespace titan;
using namespace titan::target;

namespace {
/// The model every op with some target's rule gets: the named target's
/// rule, or 0 where that target has none (or no such target is
/// registered).
struct WorkspaceRuleModel
    : WorkspaceOpInterface::FallbackModel<WorkspaceRuleModel> {
  int64_t getWorkspaceBytes(Operation *op, StringRef target) const {
    const TargetBackend *backend = lookupTargetBackend(target);
    return backend ? backend->getWorkspaceRules().getWorkspaceBytes(op) : 0;
  }
};

/// Attaches one rule set's models as each dialect loads (any dialect: the
/// rules may be on any dialect's ops).
class AttachWorkspaceModels : public DialectExtensionBase {
public:
  explicit AttachWorkspaceModels(const WorkspaceRules &rules)
      : DialectExtensionBase(/*dialectNames=*/{}), rules(rules) {}

  void apply(MLIRContext *context,
             MutableArrayRef<Dialect *> dialects) const override {
    for (Dialect *dialect : dialects)
      rules.attachModels(context, dialect->getNamespace());
  }

  std::unique_ptr<DialectExtensionBase> clone() const override {
    return std::make_unique<AttachWorkspaceModels>(*this);
  }

private:
  const WorkspaceRules &rules;
};

StringRef dialectOf(StringRef opName) { return opName.split('.').first; }
} // namespace

void WorkspaceRules::add(StringRef opName, Rule rule) {
  rules[opName] = std::move(rule);
}

int64_t WorkspaceRules::getWorkspaceBytes(Operation *op) const {
  auto it = rules.find(op->getName().getStringRef());
  return it == rules.end() ? 0 : it->second(op);
}

void WorkspaceRules::registerModels(DialectRegistry &registry) const {
  // One extension per rule set: its address tells them apart.
  registry.addExtension(TypeID::getFromOpaquePointer(this),
                        std::make_unique<AttachWorkspaceModels>(*this));
}

void WorkspaceRules::attachModels(MLIRContext *context,
                                  StringRef dialectNamespace) const {
  for (const auto &entry : rules) {
    if (dialectOf(entry.getKey()) != dialectNamespace)
      continue;
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(entry.getKey(), context);
    if (op && !op->hasInterface<WorkspaceOpInterface>())
      op->attachInterface<WorkspaceRuleModel>();
  }
}

bool WorkspaceRules::hasModels(MLIRContext *context) const {
  for (const auto &entry : rules) {
    if (!context->getLoadedDialect(dialectOf(entry.getKey())))
      continue;
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(entry.getKey(), context);
    if (!op || !op->hasInterface<WorkspaceOpInterface>())
      return false;
  }
  return true;
}
