// A TCP proxy for tests that can turn into a black hole: it forwards bytes between each accepted
// connection and 127.0.0.1:<target port> until BlackHole() is called, and from then on reads and
// drops everything in both directions without closing any socket. Neither end sees a FIN or a
// reset, only silence: what a robot whose Wi-Fi dropped (or a server that vanished) looks like
// from the other side, without root tricks. Header-only; one poll() thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fieldbrain::testing {

class BlackHoleProxy {
 public:
  // Listens on 127.0.0.1 at a free port; nullptr when the socket calls fail.
  static std::unique_ptr<BlackHoleProxy> Start(int target_port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return nullptr;
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd, 16) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(fd);
      return nullptr;
    }
    auto proxy = std::unique_ptr<BlackHoleProxy>(new BlackHoleProxy(fd, target_port));
    proxy->port_ = ntohs(addr.sin_port);
    proxy->thread_ = std::thread([p = proxy.get()] { p->Run(); });
    return proxy;
  }

  ~BlackHoleProxy() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }
  BlackHoleProxy(const BlackHoleProxy&) = delete;
  BlackHoleProxy& operator=(const BlackHoleProxy&) = delete;

  int port() const { return port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  // From now on nothing gets through either way, and nothing is closed (connections accepted
  // later are silent too).
  void BlackHole() { black_hole_ = true; }

 private:
  BlackHoleProxy(int listen_fd, int target_port)
      : listen_fd_(listen_fd), target_port_(target_port) {}

  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }

  static bool SendAll(int fd, const char* data, ssize_t n) {
    while (n > 0) {
      const ssize_t sent = ::send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
      if (sent <= 0) return false;
      data += sent;
      n -= sent;
    }
    return true;
  }

  // fds_ holds the connections in pairs: [2k] the accepted side, [2k + 1] the target side.
  void Run() {
    std::vector<bool> open;  // per fd: still polled
    char buffer[64 * 1024];
    while (!stop_) {
      std::vector<pollfd> polled = {{listen_fd_, POLLIN, 0}};
      std::vector<size_t> index = {0};
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (!open[i]) continue;
        polled.push_back({fds_[i], POLLIN, 0});
        index.push_back(i);
      }
      if (::poll(polled.data(), polled.size(), 20) <= 0) continue;
      if (polled[0].revents & POLLIN) {
        const int in = ::accept(listen_fd_, nullptr, nullptr);
        if (in >= 0) {
          const int out = ::socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in addr = Loopback(target_port_);
          if (out < 0 || ::connect(out, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            ::close(in);
            if (out >= 0) ::close(out);
          } else {
            const int one = 1;
            ::setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            ::setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            fds_.push_back(in);
            fds_.push_back(out);
            open.push_back(true);
            open.push_back(true);
          }
        }
      }
      for (size_t k = 1; k < polled.size(); ++k) {
        if ((polled[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const size_t i = index[k];
        const size_t peer = i ^ 1;
        const ssize_t n = ::recv(fds_[i], buffer, sizeof(buffer), 0);
        if (n > 0 && (black_hole_ || SendAll(fds_[peer], buffer, n))) continue;
        // Closed or failed. Forwarding: pass the close on. Black hole: say nothing, stop polling.
        open[i] = false;
        if (!black_hole_) {
          open[peer] = false;
          ::shutdown(fds_[peer], SHUT_RDWR);
        }
      }
    }
  }

  const int listen_fd_;
  const int target_port_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> black_hole_{false};
  std::vector<int> fds_;  // proxy thread only, then the destructor
  std::thread thread_;
};

}  // namespace fieldbrain::testing
