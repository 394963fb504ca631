//===- RankShutdown.cpp - the order a rank tears down in ------------------===//

#include "RankShutdown.h"

#include "titanrt/Device.h"

using namespace titanrt;

void titanrt::finishRank(Device &device,
                         llvm::function_ref<void()> shutdownCommunicator) {
  device.releaseGraphs();
  if (shutdownCommunicator)
    shutdownCommunicator();
  device.release();
}
