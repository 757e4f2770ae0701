// Runs the real brain-server binary as a child process for end-to-end tests.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace fieldbrain::server::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
int PickFreePort();

class ChildProcess {
 public:
  // Starts `argv[0]` with the given arguments; stdout/stderr go to the test's.
  static std::optional<ChildProcess> Spawn(const std::vector<std::string>& argv);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();  // SIGKILLs and reaps a child still running

  void Signal(int sig) const;
  // The raw wait status once the child exits within `timeout`; nullopt if it is still running.
  std::optional<int> WaitExit(absl::Duration timeout);
  bool running();
  pid_t pid() const { return pid_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace fieldbrain::server::testing
