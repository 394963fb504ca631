//===- TensorBoard.cpp - TensorBoard event files --------------------------===//

#include "TensorBoard.h"

#include "Communicator.h"
#include "Error.h"

#include "titan/Contract/TrainConfig.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <boost/crc.hpp>

#include <chrono>
#include <cstring>
#include <ctime>

#include <unistd.h>

using namespace titanrt;
using llvm::StringRef;

namespace {

/// TFRecord's checksum: CRC32C (Castagnoli), masked so that a CRC of data
/// holding CRCs does not degenerate (TensorFlow's crc32c::Mask).
uint32_t maskedCrc32c(StringRef bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/// The few protobuf encodings an Event needs. Three messages with a handful
/// of fields (tensorflow/core/util/event.proto, summary.proto) do not
/// justify libprotobuf and a protoc build step; field numbers are noted
/// where they are used.
class ProtoWriter {
public:
  void varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7)
      bytes.push_back(char(v | 0x80));
    bytes.push_back(char(v));
  }
  void key(unsigned field, unsigned wireType) { varint(field << 3 | wireType); }
  void fixed64(unsigned field, uint64_t v) {
    key(field, 1);
    little<uint64_t>(v);
  }
  void fixed32(unsigned field, uint32_t v) {
    key(field, 5);
    little<uint32_t>(v);
  }
  void integer(unsigned field, int64_t v) {
    key(field, 0);
    varint(uint64_t(v));
  }
  /// A string, bytes or embedded message.
  void lengthDelimited(unsigned field, StringRef v) {
    key(field, 2);
    varint(v.size());
    bytes += v;
  }
  std::string bytes;

private:
  template <typename T> void little(T v) {
    char out[sizeof(T)];
    llvm::support::endian::write<T, llvm::endianness::little>(out, v);
    bytes.append(out, sizeof(T));
  }
};

template <typename To, typename From> To bitCast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}

/// An Event (event.proto) with its wall_time (1), step (2) and either
/// file_version (3) or summary (5).
std::string encodeEvent(int64_t step, unsigned field, StringRef what) {
  double wallTime = std::chrono::duration<double>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  ProtoWriter event;
  event.fixed64(1, bitCast<uint64_t>(wallTime));
  event.integer(2, step);
  event.lengthDelimited(field, what);
  return std::move(event.bytes);
}

/// A Summary (summary.proto) of one Value: tag (1), simple_value (2).
std::string encodeScalarSummary(StringRef tag, float value) {
  ProtoWriter v;
  v.lengthDelimited(1, tag);
  v.fixed32(2, bitCast<uint32_t>(value));
  ProtoWriter summary;
  summary.lengthDelimited(1, v.bytes);
  return std::move(summary.bytes);
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return "localhost";
  return name;
}

/// TorchTitan's _get_metrics_rank: the rank that computes the loss.
int64_t metricsRank(const titan::TrainConfig &c, const Manifest &m) {
  int64_t pp = m.mesh[kPP];
  // V schedules put the last stage on pipeline rank 0.
  StringRef schedule = c.parallelism.pipelineParallelSchedule;
  if (pp == 1 || schedule == "ZBVZeroBubble" || schedule == "DualPipeV")
    return 0;
  return m.worldSize() / pp * (pp - 1);
}

/// The run's folder name, the start's local time as TorchTitan formats it.
std::string timeFolder(std::time_t t) {
  std::tm local{};
  ::localtime_r(&t, &local);
  char name[32];
  std::strftime(name, sizeof(name), "%Y%m%d-%H%M", &local);
  return name;
}

} // namespace

EventFileWriter::EventFileWriter(const std::string &folder) {
  if (std::error_code ec = llvm::sys::fs::create_directories(folder))
    fatal("cannot create the TensorBoard folder '" + folder +
          "' (job.dump_folder / metrics.save_tb_folder): " + ec.message());
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, llvm::formatv("events.out.tfevents.{0}.{1}.{2}",
                                              int64_t(std::time(nullptr)),
                                              hostName(), ::getpid())
                                    .str());
  path_ = path.str().str();
  std::error_code ec;
  out_ = std::make_unique<llvm::raw_fd_ostream>(path_, ec);
  if (ec)
    fatal("cannot write the TensorBoard event file '" + path_ +
          "': " + ec.message());
  writeRecord(encodeEvent(0, 3, "brain.Event:2"));
}

void EventFileWriter::logScalar(StringRef tag, int64_t step, double value) {
  writeRecord(encodeEvent(step, 5, encodeScalarSummary(tag, float(value))));
}

void EventFileWriter::writeRecord(StringRef event) {
  char length[8];
  llvm::support::endian::write<uint64_t, llvm::endianness::little>(
      length, event.size());
  char crc[4];
  auto writeCrc = [&](StringRef bytes) {
    llvm::support::endian::write<uint32_t, llvm::endianness::little>(
        crc, maskedCrc32c(bytes));
    out_->write(crc, sizeof(crc));
  };
  out_->write(length, sizeof(length));
  writeCrc(StringRef(length, sizeof(length)));
  *out_ << event;
  writeCrc(event);
  out_->flush();
  if (out_->has_error())
    fatal("cannot write the TensorBoard event file '" + path_ +
          "': " + out_->error().message());
}

std::unique_ptr<EventFileWriter>
titanrt::openTensorBoard(const titan::TrainConfig &c, const Manifest &m,
                         Communicator *comm) {
  if (!c.metrics.enableTensorboard)
    return nullptr;
  bool allRanks = c.metrics.saveForAllRanks;
  int64_t rank = comm ? comm->rank() : 0;
  // Every rank's folder carries the first rank's start time.
  double start = double(std::time(nullptr));
  if (comm && allRanks)
    comm->hostBroadcast(&start, 1, 0, (1u << kNumAxes) - 1);
  if (!allRanks && rank != metricsRank(c, m))
    return nullptr;
  // As os.path.join: an absolute save_tb_folder stands alone.
  llvm::SmallString<256> folder(c.job.dumpFolder);
  if (llvm::sys::path::is_absolute(c.metrics.saveTbFolder))
    folder = c.metrics.saveTbFolder;
  else
    llvm::sys::path::append(folder, c.metrics.saveTbFolder);
  llvm::sys::path::append(folder, timeFolder(std::time_t(start)));
  if (allRanks)
    llvm::sys::path::append(folder, "rank_" + std::to_string(rank));
  return std::make_unique<EventFileWriter>(folder.str().str());
}
