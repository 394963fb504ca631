//===- RankShutdown.cpp - the order a rank tears down in ------------------===//

#include "RankShutdown.h"

#include "titanrt/Device.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <string>

#include <unistd.h>

using namespace titanrt;

namespace {
/// Written before the handler is installed: it may only read them.
char rankText[32];
bool launched = false;
std::atomic<int64_t> currentStep{0};
std::atomic<bool> stopUnderWay{false};

/// write(2) of a C string (async-signal-safe).
void say(const char *text) {
  size_t n = std::strlen(text);
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0)
      return;
    text += w;
    n -= size_t(w);
  }
}

/// The decimal digits of `value` >= 0, written backwards from `end`.
char *decimal(int64_t value, char *end) {
  char *p = end;
  *--p = '\0';
  do
    *--p = char('0' + value % 10);
  while ((value /= 10) > 0);
  return p;
}

void onStopSignal(int sig, siginfo_t *info, void *) {
  // SA_RESETHAND restored the default action: the process ends by the
  // signal, which its exit status names.
  if (stopUnderWay.load()) {
    ::raise(sig);
    return;
  }
  // Only async-signal-safe calls: the rank may be anywhere, in malloc too.
  char step[24], pid[24];
  say("error: rank ");
  say(rankText);
  say(sig == SIGINT ? " stopped by SIGINT" : " stopped by SIGTERM");
  // A launcher sends it when it was itself stopped or another rank failed.
  if (launched && info && info->si_pid == ::getppid()) {
    say(" from its launcher");
  } else if (info && info->si_pid > 0 && info->si_pid != ::getpid()) {
    say(" from process ");
    say(decimal(info->si_pid, pid + sizeof pid));
  }
  if (int64_t s = currentStep.load(); s > 0) {
    say(" during step ");
    say(decimal(s, step + sizeof step));
  } else {
    say(" before its first step");
  }
  say("; no checkpoint is written on a signal (as in TorchTitan): a save "
      "in progress stays an unfinished step-<N>.tmp folder that is never "
      "loaded, and the next run resumes from the last complete "
      "checkpoint\n");
  // SA_RESETHAND restored the default action: the process ends by the
  // signal, which its exit status names.
  ::raise(sig);
}
} // namespace

void titanrt::stopOnSignals(int64_t rank, bool underLauncher) {
  launched = underLauncher;
  std::string text = std::to_string(rank);
  std::strncpy(rankText, text.c_str(), sizeof rankText - 1);
  struct sigaction action = {};
  action.sa_sigaction = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGTERM, SIGINT})
    ::sigaction(sig, &action, nullptr);
}

void titanrt::noteStep(int64_t step) { currentStep = step; }

void titanrt::noteStopUnderWay() { stopUnderWay = true; }

void titanrt::finishRank(Device &device,
                         llvm::function_ref<void()> shutdownCommunicator) {
  device.releaseGraphs();
  if (shutdownCommunicator)
    shutdownCommunicator();
  device.release();
}
