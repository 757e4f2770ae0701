// Polls a condition until it holds, for effects the daemon produces asynchronously (a session
// detaching, a checkpoint landing). Tests only.
#pragma once

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fieldbrain::server::testing {

// True once `done()` holds; false when it still does not after `timeout`.
template <typename F>
bool Eventually(F done, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time until = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

}  // namespace fieldbrain::server::testing
