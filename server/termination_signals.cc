#include "server/termination_signals.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace fieldbrain::server {
namespace {

sigset_t ControlSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockControlSignals() {
  const sigset_t set = ControlSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForControlSignal() {
  const sigset_t set = ControlSet();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

int WaitForControlSignalFor(absl::Duration timeout) {
  const sigset_t set = ControlSet();
  const timespec ts = absl::ToTimespec(timeout);
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;  // -1: EAGAIN (timeout) or EINTR
}

}  // namespace fieldbrain::server
