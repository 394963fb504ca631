//===- TargetOption.h - a --target option over the registry -----*- C++ -*-===//
//
// A command-line option whose values are the registered target backends
// (titan/Target/TargetBackend.h), each described as its backend describes
// itself, so that a tool's --target and its help follow the registry
// instead of listing targets.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_TARGETOPTION_H
#define TITAN_DRIVER_TARGETOPTION_H

#include "titan/Target/TargetBackend.h"

#include "llvm/Support/CommandLine.h"

namespace titan {
namespace driver {

/// The parser of `cl::opt<const target::TargetBackend *, false,
/// TargetParser>`.
class TargetParser : public llvm::cl::parser<const target::TargetBackend *> {
public:
  using parser::parser;

  /// Adds every registered backend (the built-in ones are registered
  /// first) as a value, in name order; call it before parsing.
  void addRegisteredTargets();

  /// The backend named `arg`; an unknown name is an error naming the
  /// registered ones (lookupTarget's).
  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, const target::TargetBackend *&value);
};

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_TARGETOPTION_H
