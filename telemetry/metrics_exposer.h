// Serves a metrics registry over HTTP at /metrics (prometheus-cpp's civetweb exposer).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"

namespace prometheus {
class Exposer;
}

namespace fieldbrain::telemetry {

class MetricsExposer {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one) and serves `registry` at /metrics.
  // UNAVAILABLE (with the reason) when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(
      const std::string& address, std::shared_ptr<prometheus::Registry> registry);

  ~MetricsExposer();
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;

  // The bound port (the kernel's pick when asked for port 0).
  int port() const { return port_; }

 private:
  MetricsExposer(std::unique_ptr<prometheus::Exposer> exposer, int port);
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace fieldbrain::telemetry
