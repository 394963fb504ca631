//===- TargetOption.cpp - a --target option over the registry -------------===//

#include "titan/Driver/TargetOption.h"

#include "titan/Driver/Driver.h"
#include "titan/InitTitan.h"

using namespace titan;
using namespace titan::driver;

void TargetParser::addRegisteredTargets() {
  registerAllTargetBackends();
  for (const std::string &name : target::getTargetBackendNames()) {
    const target::TargetBackend *backend = target::lookupTargetBackend(name);
    // The registry owns the backends (and so the strings) for the process.
    addLiteralOption(backend->getName(), backend, backend->getDescription());
  }
}

bool TargetParser::parse(llvm::cl::Option &option, llvm::StringRef,
                         llvm::StringRef arg,
                         const target::TargetBackend *&value) {
  llvm::Expected<const target::TargetBackend &> backend = lookupTarget(arg);
  if (!backend)
    return option.error(llvm::toString(backend.takeError()));
  value = &*backend;
  return false;
}
