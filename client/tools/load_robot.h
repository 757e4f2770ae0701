// LoadRobot: one robot of brain-load, a Cycle stream on gRPC's callback API with no thread of its
// own, so that hundreds of robots fit beside the daemon on a small machine. A pacer thread calls
// Tick() once per control period; reads run inside the reactor.
//
// At most one write is in flight: a tick that finds the previous frame still being written is
// counted as skipped (that robot is being starved), not queued. A round trip runs from just before
// the frame's write starts to the reading of its MotorFrame.
//
// Lifetime: the stream holds back its end (a hold) until Close(), so Tick() can never write to a
// finished reactor; destroy a LoadRobot only after Close() returned.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "brain/v1/brain.grpc.pb.h"
#include "client/tools/latency_histogram.h"

namespace fieldbrain::sim {

// What a robot (or all of them) saw since the last look.
struct LoadWindow {
  LatencyHistogram round_trip;   // frame written -> its MotorFrame read, on this machine
  LatencyHistogram server_time;  // MotorFrame.server_time_us: frame arrival -> answer, in the daemon
  uint64_t sent = 0;
  uint64_t answered = 0;
  uint64_t skipped = 0;                     // ticks whose previous frame was still being written
  std::map<std::string, uint64_t> not_ok;   // FrameStatus name -> answers with it
  void Merge(const LoadWindow& other);
};

class LoadRobot final : public grpc::ClientBidiReactor<brain::v1::CycleRequest, brain::v1::CycleResponse> {
 public:
  // Robot "<id_prefix><index>" with sensor_count sensors (values in [-1, 1] that change every
  // tick) and motor_count motors. Its Hello asks for a fresh brain.
  LoadRobot(std::string robot_id, int sensor_count, int motor_count);

  // Opens the stream (with x-robot-id metadata) and sends the Hello.
  void Start(brain::v1::Brain::Stub* stub, const std::string& bearer_token);
  // True once the Welcome arrived within `timeout`.
  bool WaitWelcome(absl::Duration timeout);
  // One control tick: sends the next SensorFrame unless a write is still in flight or the stream
  // has ended.
  void Tick();
  // What happened since the last call.
  LoadWindow TakeWindow();
  // The stream ended (the server ended it or it broke) before Close().
  bool ended() const;
  // Half-closes, waits up to `timeout` for the stream's end and returns its status.
  grpc::Status Close(absl::Duration timeout);

 private:
  static constexpr int kRing = 64;  // send times of the last frames, by seq

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnWritesDoneDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  const std::string robot_id_;
  const int sensor_count_;
  const int motor_count_;
  grpc::ClientContext context_;
  brain::v1::CycleRequest request_;    // the one in flight; only the writer touches it
  brain::v1::CycleResponse response_;  // only the read reaction touches it
  absl::Notification welcomed_;
  absl::Notification done_;
  grpc::Status status_;  // set before done_

  mutable absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::array<absl::Time, kRing> sent_at_ ABSL_GUARDED_BY(mu_){};
  std::array<uint64_t, kRing> sent_seq_ ABSL_GUARDED_BY(mu_){};
  LoadWindow window_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fieldbrain::sim
