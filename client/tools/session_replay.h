// Replaying a recorded session (client/session_recording.h) against a brain server: the recorded
// sensor frames go, in order and in lockstep, to a new brain of the recorded seed, and every
// answer is held to the recorded one, bit for bit. On the same engine and field a brain is
// deterministic, so the first difference is a real one (another engine, another build, a bug).
//
// Only frames the original brain ran are sent: a frame whose recorded answer is DEADLINE_EXCEEDED,
// SUPERSEDED, SHUTTING_DOWN, INTERNAL_ERROR or RATE_LIMITED did not reach the brain and is
// skipped. A replayed frame answered RATE_LIMITED (the replay outran the server's limit) is sent
// again after a pause. A frame
// without a recorded answer (the link dropped) is decided by the cycle counts around it: the next
// OK answer's cycle says how many of the unanswered frames the brain ran; when that is neither
// all nor none of them the replay is refused as ambiguous. Frames the server rejected as invalid
// are sent again and their status is compared.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/security/credentials.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "brain/v1/recording.pb.h"

namespace fieldbrain::sim {

// One frame to send, and the answer to hold it to (none when its answer was lost).
struct ReplayFrame {
  brain::v1::SensorFrame sensors;
  std::optional<brain::v1::MotorFrame> recorded;
};

// One brain's life in the recording: a Welcome that gave a new brain, through the frames it ran
// (across reconnects that resumed it), up to the next new brain.
struct ReplayBrain {
  brain::v1::Hello hello;      // as first recorded (no resume token)
  brain::v1::Welcome welcome;  // the new brain's Welcome: seed, engine, field
  std::vector<ReplayFrame> frames;
};

struct ReplayPlan {
  std::vector<ReplayBrain> brains;
  int64_t frames_recorded = 0;  // SensorFrames in the file
  int64_t frames_skipped = 0;   // not run by the original brain, so not sent
};

// Refuses a recording that cannot be replayed, saying why: no Hello or Welcome, a first brain
// that was resumed (it did not start from its seed), a brain resumed at an earlier cycle than it
// had reached (restored from an older checkpoint), or frames whose fate is ambiguous. Answers to
// frames the file does not hold are ignored.
absl::StatusOr<ReplayPlan> PlanReplay(const std::vector<brain::v1::RecordEntry>& entries);

struct ReplayOptions {
  std::string target;
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // nullptr = insecure
  std::string bearer_token;  // for a server with a tokens file
  std::string robot_id;  // empty: "replay-" + the recorded robot_id (truncated to 128 bytes)
  absl::Duration timeout = absl::Minutes(10);  // the whole replay
};

struct ReplayReport {
  int64_t frames_sent = 0;
  int64_t frames_compared = 0;  // sent and held to a recorded answer
  int64_t rate_limited = 0;     // answered RATE_LIMITED (not run) and sent again
  std::vector<std::string> notes;  // e.g. the server's engine or field differs from the recording's
  // Empty when every answer was identical; else where the first difference is.
  std::string first_difference;
};

// Errors are about the replay itself (cannot connect, stream refused, server gone), not about
// differences, which the report carries.
absl::StatusOr<ReplayReport> ReplaySession(const ReplayPlan& plan, const ReplayOptions& options);

}  // namespace fieldbrain::sim
