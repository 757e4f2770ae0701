// The checkpoint file of one robot's brain, version 4 (docs/checkpoint-format.md; files of
// versions 1-3, with no driver or with the field readout's retired state, are refused with that
// reason): written field by field,
// little-endian, never as a dump of in-memory structs, so that a build with another struct layout
// or compiler reads the same bytes. Encode and Decode walk the same field list
// (checkpoint_fields.h), so the two cannot disagree about the order.
//
// A file is refused, with the reason, when it is not a checkpoint, comes from another format,
// was written with other layout constants or another field shape, is cut short, or its SHA-256
// does not match; nothing in it is trusted before the hash is checked.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpu/engine.h"

namespace fieldbrain::server {

inline constexpr uint32_t kCheckpointVersion = 5;
// Version 3 added the driver's state (gpu/model/driver.h); version 4 dropped the field readout's
// actor and critic and the field's exploration noise, which nothing had read since the driver
// took the motors; version 5 appended the driver's undo, and version 4 files are still read (the
// undo idle). Older files are refused with the reason (docs/checkpoint-format.md).
inline constexpr uint32_t kOldestCheckpointVersion = 4;
inline constexpr char kCheckpointMagic[8] = {'F', 'B', 'C', 'H', 'K', 'P', 'T', '\n'};
inline constexpr size_t kMaxCheckpointRobotIdBytes = 128;

struct CheckpointHeader {
  FieldShape shape;
  int32_t sensor_count = 0;
  int32_t motor_count = 0;
  uint64_t seed = 0;
  uint64_t cycle = 0;
  std::string robot_id;
  // SHA-256 of the robot's resume token: the token itself is never stored.
  std::array<uint8_t, 32> resume_token_sha256{};
  // Which of the robot's brains this is: every new brain of a robot (first, fresh, or after its
  // old one expired) gets a higher generation than any before it; a resumed brain keeps its own.
  // A write of an older generation never replaces a newer one (checkpointer.h).
  uint64_t generation = 0;
};

struct DecodedCheckpoint {
  CheckpointHeader header;
  BrainSnapshot snapshot;
};

// The file's bytes. `snapshot` must be the brain `header` describes (its shape and counts).
std::string EncodeCheckpoint(const CheckpointHeader& header, const BrainSnapshot& snapshot);

// Refuses (DATA_LOSS for damage, FAILED_PRECONDITION for a file from another daemon or version)
// with a reason; never reads past `bytes`.
absl::StatusOr<DecodedCheckpoint> DecodeCheckpoint(absl::string_view bytes, const FieldShape& expected_shape);

// The head of a file, read without checking it (the hash covers the whole file): enough
// to tell whether a file holds a newer brain than one in memory, or another session's (daemons
// behind one proxy share the directory), never to restore one.
struct CheckpointHead {
  uint64_t cycle = 0;
  std::string robot_id;
  std::array<uint8_t, 32> resume_token_sha256{};
  uint64_t generation = 0;
};
// Magic, version, layout, shape, counts, seed, cycle, robot id (length + at most 128 bytes), token,
// generation.
inline constexpr size_t kCheckpointCycleEnd = 8 + 4 + 7 * 4 + 4 * 4 + 2 * 4 + 8 + 8;
inline constexpr size_t kCheckpointHeadMax = kCheckpointCycleEnd + 4 + kMaxCheckpointRobotIdBytes + 32 + 8;
// From the first bytes of a file (up to kCheckpointHeadMax); nullopt for a prefix without the
// magic and version, or cut before the token.
std::optional<CheckpointHead> PeekCheckpointHead(absl::string_view prefix);

}  // namespace fieldbrain::server
