//===- Communicator.cpp - the mesh view shared by every backend -----------===//

#include "Communicator.h"
#include "Error.h"

#include <string>

using namespace titanrt;

int64_t titanrt::dataTypeBytes(DataType type) {
  switch (type) {
  case DataType::F64:
    return 8;
  case DataType::F32:
  case DataType::I32:
    return 4;
  case DataType::BF16:
  case DataType::F16:
    return 2;
  case DataType::F8E4M3FN:
  case DataType::F8E5M2:
    return 1;
  }
  return 0;
}

const char *titanrt::dataTypeName(DataType type) {
  switch (type) {
  case DataType::F32:
    return "f32";
  case DataType::F64:
    return "f64";
  case DataType::BF16:
    return "bf16";
  case DataType::F16:
    return "f16";
  case DataType::F8E4M3FN:
    return "f8E4M3FN";
  case DataType::F8E5M2:
    return "f8E5M2";
  case DataType::I32:
    return "i32";
  }
  return "?";
}

int64_t Communicator::coordinate(MeshAxis axis) const {
  int64_t r = rank();
  for (int a = kNumAxes - 1; a > axis; --a)
    r /= mesh_[a];
  return r % mesh_[axis];
}

int64_t Communicator::groupSize(unsigned axisMask) const {
  int64_t n = 1;
  for (int a = 0; a < kNumAxes; ++a)
    if (axisMask & (1u << a))
      n *= mesh_[a];
  return n;
}

int64_t Communicator::groupIndex(const std::vector<MeshAxis> &axes) const {
  int64_t index = 0;
  for (MeshAxis a : axes)
    index = index * mesh_[a] + coordinate(a);
  return index;
}

int64_t Communicator::groupColor(unsigned axisMask) const {
  int64_t color = 0;
  for (int a = 0; a < kNumAxes; ++a)
    if (!(axisMask & (1u << a)))
      color = color * mesh_[a] + coordinate(MeshAxis(a));
  return color;
}

std::string Communicator::describe(const char *collective, unsigned axisMask) {
  static const char *names[] = {"pp", "dp_replicate", "dp_shard", "cp", "tp"};
  std::string axes;
  for (int a = 0; a < kNumAxes; ++a)
    if (axisMask & (1u << a))
      axes += (axes.empty() ? "" : ", ") + std::string(names[a]);
  return std::string(collective) + " over [" + axes + "]";
}

std::string Communicator::timeoutMessage(const char *collective,
                                         unsigned axisMask,
                                         const std::string &context,
                                         double seconds) {
  return describe(collective, axisMask) + " at " + context +
         " did not complete within " + std::to_string(int64_t(seconds)) +
         " s ([comm] timeout): a peer has stopped or is lost; aborting every "
         "rank";
}

void titanrt::checkWorldSize(const std::vector<int64_t> &mesh, int64_t size) {
  int64_t expected = 1;
  for (int64_t d : mesh)
    expected *= d;
  if (size == expected)
    return;
  fatal("this executable was compiled for " + std::to_string(expected) +
        " ranks (mesh pp x dp_replicate x dp_shard x cp x tp = " +
        std::to_string(mesh[kPP]) + " x " + std::to_string(mesh[kDPReplicate]) +
        " x " + std::to_string(mesh[kDPShard]) + " x " +
        std::to_string(mesh[kCP]) + " x " + std::to_string(mesh[kTP]) +
        ") but was launched on " + std::to_string(size) +
        "; launch it with mpirun -np " + std::to_string(expected) +
        " or recompile with titan-compile --world-size " +
        std::to_string(size));
}

namespace {
std::unique_ptr<Communicator> &instance() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}
} // namespace

Communicator &titanrt::initCommunicator(const std::vector<int64_t> &meshShape,
                                        Backend backend,
                                        double timeoutSeconds) {
  instance() = backend == Backend::NCCL
                   ? createNCCLCommunicator(meshShape, timeoutSeconds)
                   : createMPICommunicator(meshShape);
  instance()->setTimeout(timeoutSeconds);
  return *instance();
}

Communicator &titanrt::communicator() {
  if (!instance())
    fatal("internal error: collective called before the communicator was "
          "initialized");
  return *instance();
}

void titanrt::shutdownCommunicator() {
  instance().reset();
  finalizeMPI();
}

#ifndef TITAN_HAVE_NCCL
std::unique_ptr<Communicator>
titanrt::createNCCLCommunicator(const std::vector<int64_t> &, double) {
  fatal("this runtime was built without CUDA, so it has no NCCL "
        "communicator; rebuild titan with TITAN_ENABLE_CUDA=ON");
}
#endif
