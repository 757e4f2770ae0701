// Arbitrary bytes as a CycleRequest, as the daemon parses them: a Hello's profile goes through
// ValidateProfile, a frame through ValidateFrame against every sensor count the profile allows.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "brain/v1/brain.pb.h"
#include "gpu/model/field_shape.h"
#include "server/frame_validator.h"
#include "server/profile_validator.h"

// Invalid UTF-8 in a string field is an expected parse failure, not news: keep the log quiet.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  brain::v1::CycleRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  brain::v1::ServerLimits limits;
  limits.set_max_sensors(fieldbrain::kMaxSensors);
  limits.set_max_motors(fieldbrain::kMaxMotors);
  limits.set_max_robots(4);
  if (request.has_hello()) {
    (void)fieldbrain::server::ValidateProfile(request.hello().profile(), limits);
  }
  if (request.has_sensors()) {
    const int counts[] = {1, 12, request.sensors().values_size(), int(fieldbrain::kMaxSensors)};
    for (int count : counts) {
      const fieldbrain::server::FrameVerdict v = fieldbrain::server::ValidateFrame(request.sensors(), count);
      // A frame the validator passes must be one the engine can take.
      if (v.ok() && request.sensors().values_size() != count) __builtin_trap();
    }
  }
  return 0;
}
