// Arbitrary bytes as a checkpoint file: refused with a reason, or decoded into a brain whose sizes
// match the shape it claims; never a read past the input or an allocation it did not announce.
// The unchecked head a daemon peeks at (PeekCheckpointHead) must agree with a full decode.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "server/checkpoint/checkpoint_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::optional<fieldbrain::server::CheckpointHead> head = fieldbrain::server::PeekCheckpointHead(bytes);
  if (head.has_value() && head->robot_id.size() > fieldbrain::server::kMaxCheckpointRobotIdBytes) __builtin_trap();
  absl::StatusOr<fieldbrain::server::DecodedCheckpoint> d =
      fieldbrain::server::DecodeCheckpoint(bytes, fieldbrain::FieldShape::Small());
  if (!d.ok()) return 0;
  if (!head.has_value() || head->cycle != d->header.cycle || head->robot_id != d->header.robot_id ||
      head->resume_token_sha256 != d->header.resume_token_sha256) {
    __builtin_trap();
  }
  if (int64_t(d->snapshot.field.size()) != fieldbrain::FieldShape::Small().floats()) __builtin_trap();
  if (d->header.robot_id.size() > fieldbrain::server::kMaxCheckpointRobotIdBytes) __builtin_trap();
  return 0;
}
