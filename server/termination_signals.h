// SIGTERM/SIGINT (stop) and SIGHUP (reload the tokens file) without work in a signal handler: the
// signals are blocked in every thread (call BlockControlSignals before starting any) and the main
// thread collects them with sigwait.
#pragma once

#include "absl/time/time.h"

namespace fieldbrain::server {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and every thread it starts afterwards.
void BlockControlSignals();
// Waits until SIGTERM, SIGINT or SIGHUP arrives; returns its number.
int WaitForControlSignal();
// The same for at most `timeout`; 0 when none arrived (so the caller can look at other reasons to
// stop, such as a lost device).
int WaitForControlSignalFor(absl::Duration timeout);

}  // namespace fieldbrain::server
