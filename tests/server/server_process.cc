#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"

extern char** environ;

namespace fieldbrain::server::testing {

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string HttpGet(int port, const std::string& path) {
  std::string body;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return body;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) body.append(buf, size_t(n));
    }
  }
  close(fd);
  return body;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

namespace {

// The number after the first `key` in `text`, or 0.
int PortAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  const size_t colon = text.find_first_of(" /", at + key.size());
  const std::string address = text.substr(at + key.size(), colon - at - key.size());
  const size_t last = address.rfind(':');
  return last == std::string::npos ? 0 : std::atoi(address.c_str() + last + 1);
}

}  // namespace

std::optional<DaemonPorts> WaitForDaemonPorts(ChildProcess& daemon, const std::string& log_path,
                                              absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until && daemon.running()) {
    const std::string log = ReadFile(log_path);
    const size_t line_at = log.find(" listening on ");
    if (line_at != std::string::npos && log.find('\n', line_at) != std::string::npos) {
      const std::string line = log.substr(line_at, log.find('\n', line_at) - line_at);
      DaemonPorts ports;
      ports.grpc = PortAfter(line, " listening on ");
      ports.metrics = PortAfter(line, " metrics=");
      if (ports.grpc > 0) return ports;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return std::nullopt;
}

std::optional<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                const std::string& stderr_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  pid_t pid = -1;
  // posix_spawn, not fork: the test process runs gRPC threads.
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::nullopt;
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && running()) {
    kill(pid_, SIGKILL);
    WaitExit(absl::Seconds(30));
  }
}

void ChildProcess::Signal(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

bool ChildProcess::running() {
  if (pid_ <= 0 || status_.has_value()) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = status;
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::WaitExit(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (running()) {
    if (absl::Now() > until) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return status_;
}

}  // namespace fieldbrain::server::testing
