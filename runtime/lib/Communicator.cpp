//===- Communicator.cpp - the mesh view shared by every backend -----------===//

#include "Communicator.h"
#include "Bootstrap.h"
#include "Error.h"
#include "Launch.h"
#include "Trace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <dlfcn.h>

using namespace titanrt;

Communicator *Communicator::live_ = nullptr;

/// The flight recorder's ring: entries are numbered from 0 in issue order,
/// and the last `capacity` are kept.
struct Communicator::FlightRecorder {
  struct Entry {
    int64_t id, seq;
    const char *collective;
    unsigned axisMask;
    Dtype type;
    int64_t count, peer;
    double issued, completed = -1;
    std::string context;
  };
  std::mutex mutex;
  int64_t capacity = 0;
  std::string path;
  std::deque<Entry> entries;
  int64_t nextId = 0;
  /// Per group (axis mask; point-to-point transfers count apart, as
  /// PyTorch's p2p sequence numbers), the next sequence number.
  std::map<unsigned, int64_t> nextSeq;
  bool dumped = false;
};

Communicator::~Communicator() {
  if (live_ == this)
    live_ = nullptr;
}

void Communicator::setFlightRecorder(int64_t capacity, std::string path) {
  if (capacity <= 0) {
    recorder_.reset();
    return;
  }
  recorder_ = std::make_shared<FlightRecorder>();
  recorder_->capacity = capacity;
  recorder_->path = std::move(path);
}

bool Communicator::flightRecorderOn() const { return recorder_ != nullptr; }

int64_t Communicator::recordIssued(const char *collective, unsigned axisMask,
                                   Dtype type, int64_t count, double issued,
                                   int64_t peer) {
  if (!recorder_)
    return -1;
  FlightRecorder &r = *recorder_;
  std::lock_guard<std::mutex> lock(r.mutex);
  unsigned group = axisMask | (peer >= 0 ? 1u << 16 : 0u);
  FlightRecorder::Entry e{r.nextId++, r.nextSeq[group]++,
                          collective, axisMask,
                          type,       count,
                          peer,       issued,
                          -1,         context_};
  r.entries.push_back(std::move(e));
  while (int64_t(r.entries.size()) > r.capacity)
    r.entries.pop_front();
  return r.entries.back().id;
}

void Communicator::recordCompleted(int64_t entry, double completed) {
  if (!recorder_ || entry < 0)
    return;
  FlightRecorder &r = *recorder_;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.entries.empty() || entry < r.entries.front().id)
    return; // already overwritten
  r.entries[size_t(entry - r.entries.front().id)].completed = completed;
}

bool Communicator::dumpFlightRecord(const std::string &reason) {
  if (!recorder_)
    return false;
  FlightRecorder &r = *recorder_;
  std::lock_guard<std::mutex> lock(r.mutex);
  // Nothing to tell before the first collective (bad input at start-up).
  if (r.dumped || r.entries.empty())
    return false;
  r.dumped = true;
  llvm::SmallString<256> folder(r.path);
  llvm::sys::path::remove_filename(folder);
  std::error_code ec;
  if (!folder.empty())
    ec = llvm::sys::fs::create_directories(folder);
  std::string tmp = r.path + ".tmp";
  std::unique_ptr<llvm::raw_fd_ostream> file;
  if (!ec)
    file = std::make_unique<llvm::raw_fd_ostream>(tmp, ec);
  if (ec) {
    std::fprintf(stderr, "warning: cannot write the flight record '%s': %s\n",
                 r.path.c_str(), ec.message().c_str());
    return false;
  }
  // The format (docs/runtime.md, "CPU communication progress and the flight
  // recorder"); version 1.
  llvm::json::OStream j(*file, 1);
  j.object([&] {
    j.attribute("format", "titan-flight-recorder");
    j.attribute("version", 1);
    j.attribute("rank", int64_t(rank_));
    j.attribute("world_size", int64_t(size_));
    j.attributeArray("mesh", [&] {
      for (int64_t d : mesh_)
        j.value(d);
    });
    j.attribute("reason", reason);
    j.attribute("dumped_us", StepTrace::now());
    j.attribute("trace_buf_size", r.capacity);
    j.attribute("recorded", r.nextId);
    // The world ranks of each group this rank's entries name.
    std::map<unsigned, bool> masks;
    for (const FlightRecorder::Entry &e : r.entries)
      masks[e.axisMask] = true;
    j.attributeObject("groups", [&] {
      for (auto &[mask, _] : masks)
        j.attributeObject(std::to_string(mask), [&] {
          j.attributeArray("axes", [&] {
            for (int a = 0; a < kNumAxes; ++a)
              if (mask & (1u << a))
                j.value(titan::mesh::axisName(MeshAxis(a)));
          });
          j.attributeArray("ranks", [&] {
            int64_t color = groupColor(mask);
            for (int64_t w = 0; w < size_; ++w) {
              // groupColor of world rank w: its coordinates off the mask.
              int64_t c = 0, rest = w;
              std::vector<int64_t> coord(kNumAxes);
              for (int a = kNumAxes - 1; a >= 0; --a) {
                coord[a] = rest % mesh_[a];
                rest /= mesh_[a];
              }
              for (int a = 0; a < kNumAxes; ++a)
                if (!(mask & (1u << a)))
                  c = c * mesh_[a] + coord[a];
              if (c == color)
                j.value(w);
            }
          });
        });
    });
    j.attributeArray("entries", [&] {
      for (const FlightRecorder::Entry &e : r.entries)
        j.object([&] {
          j.attribute("id", e.id);
          j.attribute("group", std::to_string(e.axisMask));
          j.attribute("seq", e.seq);
          j.attribute("collective", e.collective);
          if (e.peer >= 0)
            j.attribute("peer", e.peer);
          j.attribute("dtype", dtypeName(e.type));
          j.attribute("count", e.count);
          j.attribute("bytes", e.count * dtypeBytes(e.type));
          j.attribute("state", e.completed < 0 ? "issued" : "completed");
          j.attribute("issued_us", e.issued);
          if (e.completed < 0)
            j.attribute("completed_us", nullptr);
          else
            j.attribute("completed_us", e.completed);
          j.attribute("context", e.context);
        });
    });
  });
  *file << "\n";
  file->close();
  if (file->has_error() || (ec = llvm::sys::fs::rename(tmp, r.path))) {
    std::fprintf(stderr, "warning: cannot write the flight record '%s'\n",
                 r.path.c_str());
    return false;
  }
  std::fprintf(stderr,
               "rank %d: flight record of the last %zu collectives "
               "written to %s\n",
               rank_, r.entries.size(), r.path.c_str());
  return true;
}

int64_t Communicator::coordinate(MeshAxis axis) const {
  int64_t r = rank();
  for (int a = kNumAxes - 1; a > axis; --a)
    r /= mesh_[a];
  return r % mesh_[axis];
}

int64_t Communicator::peerWorldRank(int64_t ppCoordinate) const {
  int64_t stride = size_ / mesh_[kPP];
  return rank_ + (ppCoordinate - coordinate(kPP)) * stride;
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
  std::string axes;
  for (int a = 0; a < kNumAxes; ++a)
    if (axisMask & (1u << a))
      axes += (axes.empty() ? "" : ", ") +
              std::string(titan::mesh::axisName(MeshAxis(a)));
  return std::string(collective) + " over [" + axes + "]";
}

std::string Communicator::timeoutMessage(const char *collective,
                                         unsigned axisMask,
                                         const std::string &context,
                                         double seconds) {
  return timeoutMessage(describe(collective, axisMask), context, seconds);
}

std::string Communicator::timeoutMessage(const std::string &what,
                                         const std::string &context,
                                         double seconds) {
  return what + " at " + context + " did not complete within " +
         std::to_string(int64_t(seconds)) +
         " s ([comm] timeout): a peer has stopped or is lost; aborting every "
         "rank";
}

void Communicator::runOnHost(
    void *values, int64_t bytes,
    llvm::function_ref<std::unique_ptr<Request>(const void *, void *)>
        collective) {
  // A copy of the input: MPI's collectives take distinct buffers.
  std::vector<char> in(static_cast<char *>(values),
                       static_cast<char *>(values) + bytes);
  collective(in.data(), values)->finish();
}

void Communicator::hostAllReduce(double *values, int64_t count,
                                 Reduction reduction, unsigned axisMask) {
  runOnHost(values, count * int64_t(sizeof(double)),
            [&](const void *in, void *out) {
              return allReduce(in, out, Dtype::f64, count, reduction, axisMask);
            });
}

void Communicator::hostBroadcast(double *values, int64_t count, int64_t root,
                                 unsigned axisMask) {
  runOnHost(values, count * int64_t(sizeof(double)),
            [&](const void *in, void *out) {
              return broadcast(in, out, Dtype::f64, count, root, axisMask);
            });
}

namespace {
int64_t meshRanks(const std::vector<int64_t> &mesh) {
  int64_t ranks = 1;
  for (int64_t d : mesh)
    ranks *= d;
  return ranks;
}
} // namespace

void titanrt::checkWorldSize(const std::vector<int64_t> &mesh, int64_t size) {
  int64_t expected = meshRanks(mesh);
  if (size == expected)
    return;
  fatal("this executable was compiled for " + std::to_string(expected) +
        " ranks (mesh pp x dp_replicate x dp_shard x cp x tp = " +
        std::to_string(mesh[kPP]) + " x " + std::to_string(mesh[kDPReplicate]) +
        " x " + std::to_string(mesh[kDPShard]) + " x " +
        std::to_string(mesh[kCP]) + " x " + std::to_string(mesh[kTP]) +
        ") but was launched on " + std::to_string(size) +
        "; launch it with mpirun -np " + std::to_string(expected) +
        " (GPU executables also with torchrun --nproc-per-node or srun) or "
        "recompile with titan-compile --world-size " +
        std::to_string(size));
}

void Communicator::adopt(Bootstrap &bootstrap) {
  rank_ = bootstrap.rank();
  size_ = bootstrap.size();
  if (size_ > 1)
    bootstrap.stopEveryRankOnError();
  live_ = this;
  checkWorldSize(mesh_, size_);
}

namespace {
std::unique_ptr<Communicator> &instance() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}
/// NCCL's bootstrap; shutdownCommunicator ends it after the communicator.
std::unique_ptr<Bootstrap> &bootstrapInstance() {
  static std::unique_ptr<Bootstrap> bootstrap;
  return bootstrap;
}

/// The folder of this library, where its companions are.
std::string runtimeFolder() {
  Dl_info self;
  std::string dir = ".";
  if (dladdr(reinterpret_cast<void *>(&titanrt::communicator), &self) &&
      self.dli_fname) {
    dir = self.dli_fname;
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  return dir;
}

/// The library `name` of the runtime's folder; `why` says who needs it.
struct Library {
  std::string path;
  void *handle;

  Library(const char *name, const std::string &why)
      : path(runtimeFolder() + "/" + name),
        // RTLD_GLOBAL: Open MPI's own components resolve MPI's symbols.
        handle(dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    if (!handle)
      fatal("cannot load '" + path + "' (" + dlerror() + "); " + why);
  }
  template <typename F> F entry(const char *symbol) const {
    void *address = dlsym(handle, symbol);
    if (!address)
      fatal("'" + path + "' is not titan's (no " + symbol + ")");
    return reinterpret_cast<F>(address);
  }
};

/// libtitanrt_comm (CommunicatorBackends.cpp), loaded on first use: only
/// runs on MPI need it and Open MPI's libmpi.
struct MPILibrary {
  Communicator *(*create)(const int64_t *, int64_t) = nullptr;
  Bootstrap *(*bootstrap)() = nullptr;
  void (*finalize)() = nullptr;
};
bool mpiLoaded = false;
MPILibrary &mpiLibrary() {
  static MPILibrary lib = [] {
    Library comm("libtitanrt_comm.so",
                 "runs launched by mpirun need it and Open MPI's libmpi");
    MPILibrary l;
    l.create = comm.entry<decltype(l.create)>("titan_rt_create_communicator");
    l.bootstrap =
        comm.entry<decltype(l.bootstrap)>("titan_rt_create_mpi_bootstrap");
    l.finalize = comm.entry<decltype(l.finalize)>("titan_rt_finalize_mpi");
    mpiLoaded = true;
    return l;
  }();
  return lib;
}

/// libtitanrt_nccl's entry (NCCLCommunicator.cpp; CUDA builds only).
using CreateNCCL = Communicator *(*)(const int64_t *, int64_t, double,
                                     Bootstrap *);
CreateNCCL ncclEntry() {
  static CreateNCCL entry =
      Library("libtitanrt_nccl.so",
              "GPU ranks need it and NCCL (a runtime built without CUDA has no "
              "NCCL communicator; rebuild titan with TITAN_ENABLE_CUDA=ON)")
          .entry<CreateNCCL>("titan_rt_create_nccl_communicator");
  return entry;
}

/// The CPU target's collectives are MPI's: a launch without MPI's
/// bootstrap cannot run them.
void requireMPILaunch(const Launch &launch, const std::vector<int64_t> &mesh) {
  if (!launch.usesStore())
    return;
  int64_t ranks = meshRanks(mesh);
  fatal("the CPU target's collectives run over MPI, and " + launch.source +
        " started this rank without it; launch the " + std::to_string(ranks) +
        " ranks with mpirun -np " + std::to_string(ranks) +
        " ./train (or srun --mpi=pmix -n " + std::to_string(ranks) +
        "); torchrun and plain srun start GPU (--target=cuda) executables");
}

Communicator *createNCCL(const std::vector<int64_t> &mesh,
                         double timeoutSeconds, const Launch &launch) {
  // Loaded first: a rank that cannot load it stops before the others wait
  // for it at the store.
  CreateNCCL create = ncclEntry();
  std::unique_ptr<Bootstrap> &bootstrap = bootstrapInstance();
  if (launch.launcher == Launcher::Alone)
    bootstrap = std::make_unique<LoneBootstrap>();
  else if (launch.usesStore())
    bootstrap = createStoreBootstrap(launch, timeoutSeconds);
  else
    bootstrap.reset(mpiLibrary().bootstrap());
  return create(mesh.data(), int64_t(mesh.size()), timeoutSeconds,
                bootstrap.get());
}
} // namespace

Communicator &titanrt::initCommunicator(const std::vector<int64_t> &meshShape,
                                        Backend backend,
                                        double timeoutSeconds) {
  Launch launch = launchFromEnvironment();
  if (backend == Backend::MPI) {
    requireMPILaunch(launch, meshShape);
    instance().reset(
        mpiLibrary().create(meshShape.data(), int64_t(meshShape.size())));
  } else {
    instance().reset(createNCCL(meshShape, timeoutSeconds, launch));
  }
  instance()->setTimeout(timeoutSeconds);
  return *instance();
}

Communicator *titanrt::activeCommunicator() { return instance().get(); }

Communicator &titanrt::communicator() {
  if (!instance())
    fatal("internal error: collective called before the communicator was "
          "initialized");
  return *instance();
}

void titanrt::shutdownCommunicator() {
  instance().reset();
  if (std::unique_ptr<Bootstrap> &bootstrap = bootstrapInstance()) {
    bootstrap->finish();
    bootstrap.reset();
  }
  if (mpiLoaded)
    mpiLibrary().finalize();
}
