// A FrameSink for scheduler tests: keeps every answer it gets, lets a test wait for a count.
#pragma once

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/frame_sink.h"

namespace fieldbrain::server::testing {

struct RecordedAnswer {
  uint64_t seq = 0;
  brain::v1::FrameStatus status = brain::v1::FRAME_STATUS_UNSPECIFIED;
  std::string detail;
  std::vector<float> motors;
  uint64_t cycle = 0;
};

class RecordingSink final : public FrameSink {
 public:
  void Deliver(const FrameAnswer& a) override {
    absl::MutexLock lock(&mu_);
    answers_.push_back(RecordedAnswer{a.seq, a.status, std::string(a.detail),
                                      std::vector<float>(a.motors.begin(), a.motors.end()),
                                      a.cycle});
  }
  // True once `n` answers arrived; false after `timeout`.
  bool WaitFor(size_t n, absl::Duration timeout = absl::Seconds(30)) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() { return answers_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::vector<RecordedAnswer> answers() const {
    absl::MutexLock lock(&mu_);
    return answers_;
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return answers_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<RecordedAnswer> answers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fieldbrain::server::testing
