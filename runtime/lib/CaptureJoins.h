//===- CaptureJoins.h - collectives a capture must join ---------*- C++ -*-===//
//-*-===//
//
// A collective issued while the compute stream is captured forks the
// capture onto its communication stream; the capture can only end once
// that stream is joined back (Request::finish makes the compute stream
// wait for it). One left unjoined makes cudaStreamEndCapture fail with
// cudaErrorStreamCaptureUnjoined, which names nothing. The kernel IR's
// verifier already requires every kernel.collective_start to be waited in
// its own block; this catches what the runtime issues itself (async TP's
// ring shifts, host-value collectives) and names the collective.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_CAPTUREJOINS_H
#define TITANRT_LIB_CAPTUREJOINS_H

#include <cstdint>
#include <map>
#include <string>

namespace titanrt {

class CaptureJoins {
public:
  /// A collective issued under capture, described as `what` ("all_gather
  /// over [dp_shard] at step 2"); returns the token its join passes back.
  int64_t issued(std::string what) {
    open_.emplace(next_, std::move(what));
    return next_++;
  }
  /// The collective of `token` was joined back into the compute stream.
  void joined(int64_t token) { open_.erase(token); }
  /// Empty when every collective issued so far was joined; otherwise why
  /// `graph` cannot be captured, naming the first unjoined ones. Forgets
  /// them either way (the next capture starts clean).
  std::string takeUnjoinedError(const std::string &graph) {
    if (open_.empty())
      return "";
    std::string names;
    int shown = 0;
    for (auto &[token, what] : open_) {
      if (shown++ == 3) {
        names += ", ...";
        break;
      }
      names += (names.empty() ? "" : ", ") + what;
    }
    std::string message =
        "internal error: " + std::to_string(open_.size()) +
        " collective(s) issued while capturing " + graph +
        " were never waited for (" + names +
        "): the capture cannot end (cudaErrorStreamCaptureUnjoined); rerun "
        "with --debug.no_cuda_graphs and report the titan op";
    open_.clear();
    return message;
  }

private:
  std::map<int64_t, std::string> open_;
  int64_t next_ = 0;
};

} // namespace titanrt

#endif // TITANRT_LIB_CAPTUREJOINS_H
