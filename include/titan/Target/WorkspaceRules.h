//===- WorkspaceRules.h - a target's kernel workspaces, per op --*- C++ -*-===//
//
// A target states the scratch memory its kernel for an op needs as a rule,
// a function of the op, one per op. The dialects define one
// WorkspaceOpInterface whose method takes a target's name; the rules'
// owners attach one generic model of it to the ops they have rules for,
// which answers with the named target's rule. So a new target adds rules
// without touching a dialect, and targets share the ops' models.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_WORKSPACERULES_H
#define TITAN_TARGET_WORKSPACERULES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace titan::target {

class WorkspaceRules {
public:
  using Rule = std::function<int64_t(mlir::Operation *)>;

  /// Makes `rule` the rule of the ops `Op` (replacing an earlier one).
  template <typename Op> void add(std::function<int64_t(Op)> rule) {
    add(Op::getOperationName(), [rule = std::move(rule)](mlir::Operation *op) {
      return rule(llvm::cast<Op>(op));
    });
  }

  /// The bytes `op`'s rule gives, or 0 for an op without a rule.
  int64_t getWorkspaceBytes(mlir::Operation *op) const;
  /// Whether some rule is `opName`'s.
  bool hasRule(llvm::StringRef opName) const { return rules.contains(opName); }

  /// Attaches the generic WorkspaceOpInterface model, which answers for
  /// the registered target backend it is asked about
  /// (titan/Target/TargetBackend.h), to each op with a rule here, as the
  /// op's dialect loads in a context made with `registry`.
  void registerModels(mlir::DialectRegistry &registry) const;
  /// What registerModels' extension does as a dialect loads: attaches the
  /// model to the ops with a rule here of dialect `dialectNamespace`.
  void attachModels(mlir::MLIRContext *context,
                    llvm::StringRef dialectNamespace) const;
  /// Whether each op with a rule here has a WorkspaceOpInterface in
  /// `context`, where its dialect is loaded.
  bool hasModels(mlir::MLIRContext *context) const;

private:
  void add(llvm::StringRef opName, Rule rule);

  llvm::StringMap<Rule> rules;
};

} // namespace titan::target

#endif // TITAN_TARGET_WORKSPACERULES_H
