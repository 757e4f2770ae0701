// BrainClient: the robot side of the fieldbrain `Cycle` stream.
//
// A BrainClient keeps one bidirectional stream to a brain server open for its whole life. Create()
// starts a background thread that connects, sends a Hello, waits for the Welcome and, whenever the
// stream fails, reconnects with exponential backoff (initial_backoff doubling up to max_backoff,
// +-20 % jitter). The first Hello presents options.resume_token (if any); reconnects present the
// resume_token and seed of the last Welcome (and never `fresh`), so the server gives the same
// brain back. If the server refuses the token (FAILED_PRECONDITION before a Welcome: the kept brain
// is not this token's, or the profile changed) the next Hellos ask for a new brain instead, which
// the server grants once its kept brain has expired; it never discards a kept brain unless asked
// with `fresh`.
// HTTP/2 keepalive (a ping after 10 s without traffic, the link given up when its ack is 5 s late)
// notices a server or network that went silent without closing the connection.
//
// Step() sends one SensorFrame and blocks until the MotorFrame with the same seq arrives or the
// deadline passes. It never blocks longer than the deadline (plus scheduling noise) and never
// fails: when no usable answer exists it returns a SAFE STOP, i.e. motor_count zero motors,
// safe_stop = true and a human-readable reason:
//   - the deadline passed               "deadline of 20 ms passed"
//   - the link is down (or went down)   "link down: UNAVAILABLE: failed to connect ..."
//   - the server rejected the frame     "server: OUT_OF_RANGE: value 3 is 1.7, outside [-1, 1]"
//   - the input is unusable             "sensor count 3 differs from the profile's 12"
//   - the client was closed             "client closed"
// Motor frames that arrive after their Step gave up (late seqs) are dropped.
//
// Threading: one thread may call Step() (it is the control loop); any thread may call
// connected(), welcome(), WaitConnected() and Close(). The destructor calls Close().
//
//   auto client = BrainClient::Create({.target = "brain:50051", .profile = profile});
//   if (!client.ok()) ...;
//   (*client)->WaitConnected(absl::Seconds(5)).IgnoreError();
//   for (;;) {
//     StepResult r = (*client)->Step(sensors, reward, absl::Milliseconds(20));
//     drive(r.motors);  // zeros on a safe stop
//   }
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <grpcpp/security/credentials.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "brain/v1/brain.pb.h"

namespace fieldbrain::client {

struct ClientOptions {
  std::string target;            // "host:port" or any gRPC target URI
  brain::v1::RobotProfile profile;
  uint64_t seed = 0;             // 0 = the server picks
  bool fresh = false;            // first Hello only: start a new brain even if one is kept
  std::string resume_token;      // first Hello only: a token kept from an earlier run's Welcome
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // nullptr = insecure
  // Sent as "authorization: Bearer <token>" on every stream, for a server with a tokens file.
  std::string bearer_token;
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  // Non-empty: record the session to this file (client/session_recording.h; the format is
  // proto/brain/v1/recording.proto): every Hello, Welcome, SensorFrame sent and MotorFrame received.
  std::string record_path;
};

// The longest deadline a Step honours: the wire carries it as SensorFrame.deadline_us, a uint32
// of microseconds (about 71.6 minutes). Longer deadlines, absl::InfiniteDuration() included, are
// clamped to this.
inline constexpr absl::Duration kMaxStepDeadline =
    absl::Microseconds(std::numeric_limits<uint32_t>::max());

// Why a Step returned a safe stop (kNone when it did not).
enum class StopCause { kNone, kDeadline, kLinkDown, kServer, kBadInput, kClosed };

// A short stable name for a cause ("deadline", "link_down", ...), for logs and counters.
const char* StopCauseName(StopCause cause);

struct StepResult {
  std::vector<float> motors;        // motor_count values in [-1, 1]; all 0 on a safe stop
  bool safe_stop = true;
  std::string reason;               // empty unless safe_stop
  StopCause cause = StopCause::kNone;
  brain::v1::FrameStatus status = brain::v1::FRAME_STATUS_UNSPECIFIED;  // server's, if answered
  float confidence = 0.0f;          // from the MotorFrame, 0 when none arrived
  float prediction_error = 0.0f;
  uint64_t seq = 0;                 // the SensorFrame's seq
  uint64_t cycle = 0;               // the brain's cycle count, 0 when no answer arrived
  absl::Duration round_trip;        // from Step's call to its return
};

class BrainClient {
 public:
  // Validates the options (target set, robot_id 1-128 bytes, sensor_count and motor_count >= 1,
  // names empty or one per sensor/motor, 0 < initial_backoff <= max_backoff), opens record_path
  // if set, and starts the background connection thread. Returns InvalidArgument on bad options
  // or a record_path that cannot be written; never waits for the server.
  static absl::StatusOr<std::unique_ptr<BrainClient>> Create(ClientOptions options);

  ~BrainClient();
  BrainClient(const BrainClient&) = delete;
  BrainClient& operator=(const BrainClient&) = delete;

  // OK once a Welcome has arrived on the current stream; DeadlineExceeded (with the last link
  // error) when that does not happen within `timeout`; FailedPrecondition after Close().
  absl::Status WaitConnected(absl::Duration timeout);

  // One control tick; see the file comment. `sensors` must hold sensor_count values; `reward`,
  // when present, judges the previous tick's action. `deadline` must be positive; it is clamped
  // to kMaxStepDeadline (so InfiniteDuration() waits about 71.6 minutes) and sent as deadline_us.
  StepResult Step(std::span<const float> sensors, std::optional<float> reward,
                  absl::Duration deadline);

  // OK unless recording was asked for and failed (the first write error or a disk that fell
  // behind; the robot runs on). Final after Close(), which writes out and closes the recording.
  absl::Status recording_status() const;

  bool connected() const;                            // a Welcome arrived on the live stream
  std::optional<brain::v1::Welcome> welcome() const;  // the latest Welcome, if any

  // Cancels the stream, stops the background thread and joins it. Idempotent. After Close,
  // Step returns safe stops with cause kClosed.
  void Close();

 private:
  class Impl;
  struct Passkey {  // lets Create use make_unique while nobody else can construct
    explicit Passkey() = default;
  };

 public:
  BrainClient(Passkey, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fieldbrain::client
