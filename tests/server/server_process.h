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

// The body of a plain HTTP/1.0 GET of `path` on 127.0.0.1:port (headers included); empty when
// nothing answered. No HTTP client library in the test deps; this is enough for /metrics.
std::string HttpGet(int port, const std::string& path);

class ChildProcess;

// The ports a brain-server started with --listen=HOST:0 (and --metrics_listen=HOST:0) bound, read
// from its start-up log line in `log_path` (its stderr). Asking the daemon beats picking a free
// port first: between the pick and the bind, another test's connection may take that port.
struct DaemonPorts {
  int grpc = 0;
  int metrics = 0;  // 0 without --metrics_listen
};
std::optional<DaemonPorts> WaitForDaemonPorts(ChildProcess& daemon, const std::string& log_path,
                                              absl::Duration timeout);
// The whole file, for failure messages.
std::string ReadFile(const std::string& path);

class ChildProcess {
 public:
  // Starts `argv[0]` with the given arguments; stdout goes to the test's, stderr too unless
  // `stderr_path` names a file to write it to instead.
  static std::optional<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                           const std::string& stderr_path = "");
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
