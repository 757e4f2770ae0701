// MemoryThread: the Memory service's own thread. Every Memory request, and the store's creation
// and destruction, run here one at a time and never on the robots' engine thread: creating or
// deleting a space (device allocations, cuFFT plans) or a long request delays only later Memory
// requests, never a robot's batch. On the CUDA backend its device work goes to the shared HRR
// context's own stream (gpu/hrr/cuda/cuda_libraries.h), not the engine's.
//
// The thread runs at a lower CPU priority (nice +10, where the system allows it), so that where
// it shares cores with the CPU engine's workers the robots' cycles win. gRPC threads only queue
// jobs here; they never run one.
#pragma once

#include <cstdint>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace fieldbrain::server::memory {

// kServing: on the Memory thread. kStopped: the thread has ended; the job runs on the caller's
// thread and must only answer its caller and release what it holds.
enum class MemoryJobState { kServing, kStopped };
using MemoryJob = absl::AnyInvocable<void(MemoryJobState state) &&>;

class MemoryThread {
 public:
  MemoryThread();  // starts the thread
  ~MemoryThread();  // Stop()
  MemoryThread(const MemoryThread&) = delete;
  MemoryThread& operator=(const MemoryThread&) = delete;

  // Queues `job` to run exactly once, in the order jobs were given; after Stop it runs at once,
  // here, with kStopped.
  void Run(MemoryJob job);
  // Runs every job already queued, then ends the thread. Idempotent.
  void Stop();

  bool on_thread() const { return std::this_thread::get_id() == id_; }
  int64_t jobs_run() const;  // taken to run on the thread, since it started

 private:
  void Loop();
  bool HasWorkLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<MemoryJob> jobs_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t jobs_run_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex stop_mu_;  // serialises Stop() callers around join
  std::thread thread_;
  std::thread::id id_;
};

}  // namespace fieldbrain::server::memory
