#include "server/memory/memory_thread.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

namespace fieldbrain::server::memory {
namespace {

// Linux's nice is per thread: this lowers the Memory thread alone. Best effort: a system that
// refuses it leaves the thread at the process's priority.
constexpr int kMemoryThreadNice = 10;

void LowerPriority() {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  static_cast<void>(setpriority(PRIO_PROCESS, tid, kMemoryThreadNice));
}

}  // namespace

MemoryThread::MemoryThread() : thread_(&MemoryThread::Loop, this) { id_ = thread_.get_id(); }

MemoryThread::~MemoryThread() { Stop(); }

void MemoryThread::Run(MemoryJob job) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopped_) {
      jobs_.push_back(std::move(job));
      return;
    }
  }
  std::move(job)(MemoryJobState::kStopped);
}

void MemoryThread::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t MemoryThread::jobs_run() const {
  absl::MutexLock lock(&mu_);
  return jobs_run_;
}

bool MemoryThread::HasWorkLocked() const { return stop_ || !jobs_.empty(); }

void MemoryThread::Loop() {
  LowerPriority();
  for (;;) {
    MemoryJob job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &MemoryThread::HasWorkLocked));
      if (jobs_.empty()) {  // stop_ and nothing left: later jobs run on their callers' threads
        stopped_ = true;
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++jobs_run_;  // before it runs: whoever has seen a job's answer sees it counted
    }
    std::move(job)(MemoryJobState::kServing);
  }
}

}  // namespace fieldbrain::server::memory
