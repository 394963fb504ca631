//===- Deadline.cpp - bounded waits on calls that may hang ----------------===//

#include "Deadline.h"

#include "Error.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

using namespace titanrt;

namespace {
/// Shared by the waiting thread and the helper, so that a helper outliving
/// the wait never touches freed memory.
struct Completion {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
};
} // namespace

bool titanrt::runWithin(std::chrono::duration<double> limit,
                        std::function<void()> work) {
  auto state = std::make_shared<Completion>();
  std::thread helper([state, work = std::move(work)] {
    work();
    std::lock_guard<std::mutex> lock(state->mutex);
    state->done = true;
    state->finished.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mutex);
  bool done =
      state->finished.wait_for(lock, limit, [&] { return state->done; });
  lock.unlock();
  if (done)
    helper.join();
  else
    helper.detach();
  return done;
}

[[noreturn]] void titanrt::fatalWithin(std::chrono::duration<double> limit,
                                       const std::string &message) {
  std::thread([limit] {
    std::this_thread::sleep_for(limit);
    std::fprintf(stderr,
                 "error: stopping the job did not finish within %.0f s; "
                 "exiting this rank (its launcher stops the others)\n",
                 limit.count());
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
  fatal(message);
}

[[noreturn]] void titanrt::abortThenStop(std::chrono::duration<double> limit,
                                         std::function<void()> abort,
                                         const std::string &what,
                                         const std::string &failure) {
  if (!runWithin(limit, std::move(abort))) {
    std::fprintf(stderr,
                 "error: %s did not return within %.0f s; stopping the job "
                 "without it\n",
                 what.c_str(), limit.count());
    std::fflush(stderr);
  }
  fatalWithin(limit, failure);
}
