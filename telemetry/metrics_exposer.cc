#include "telemetry/metrics_exposer.h"

#include <exception>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace fieldbrain::telemetry {

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // civetweb reports a failed bind by throwing; keep exceptions inside this function.
    exposer = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", e.what()));
  }
  exposer->RegisterCollectable(registry);
  const auto ports = exposer->GetListeningPorts();
  const int port = ports.empty() ? 0 : ports.front();
  return absl::WrapUnique(new MetricsExposer(std::move(exposer), port));
}

MetricsExposer::MetricsExposer(std::unique_ptr<prometheus::Exposer> exposer, int port)
    : exposer_(std::move(exposer)), port_(port) {}

MetricsExposer::~MetricsExposer() = default;

}  // namespace fieldbrain::telemetry
