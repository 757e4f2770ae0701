// Builds a PiCar-X profile, creates a BrainClient towards a port nothing listens on and takes one
// Step: it must be a safe stop. Prints "consumer ok" when everything behaves.
#include <cstdio>

#include "brain/v1/brain.pb.h"
#include "client/brain_client.h"
#include "client/picarx/picarx_adapter.h"

int main() {
  fieldbrain::client::ClientOptions options;
  options.target = "127.0.0.1:1";
  options.profile = fieldbrain::picarx::MakeProfile("consumer", 20.0f, false);
  auto client = fieldbrain::client::BrainClient::Create(options);
  if (!client.ok()) return 1;
  const fieldbrain::picarx::Sensors sensors =
      fieldbrain::picarx::NormalizeSensors(fieldbrain::picarx::RawReading{});
  const auto result = (*client)->Step(sensors.values, std::nullopt, absl::Milliseconds(20));
  if (!result.safe_stop || result.motors.size() != 4) return 2;
  std::printf("consumer ok: %s\n", result.reason.c_str());
  return 0;
}
