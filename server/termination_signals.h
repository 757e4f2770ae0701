// SIGTERM/SIGINT without work in a signal handler: the signals are blocked in every thread (call
// BlockTerminationSignals before starting any) and one thread collects them with sigwait.
#pragma once

namespace fieldbrain::server {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts afterwards.
void BlockTerminationSignals();
// Waits until SIGTERM or SIGINT arrives; returns its number.
int WaitForTerminationSignal();

}  // namespace fieldbrain::server
