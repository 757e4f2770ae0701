// A tiny in-process Brain service for client tests. It answers Hello with a Welcome that carries a
// resume token, and each SensorFrame with a MotorFrame whose motor k is 0.5 * sensor k (wrapping
// around the sensors), after an optional delay. Frames with values outside [-1, 1] get an
// OUT_OF_RANGE status and zero motors, like the real server. Tests can make it drop every live
// stream (ending it with UNAVAILABLE) when the next frame arrives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/server.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/brain.grpc.pb.h"

namespace fieldbrain::testing {

class FakeBrainServer final : public brain::v1::Brain::Service {
 public:
  // Listens on 127.0.0.1 at `port` (0 = any free port).
  static std::unique_ptr<FakeBrainServer> Start(int port = 0);
  FakeBrainServer() = default;  // use Start()
  ~FakeBrainServer() override;

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  void set_delay(absl::Duration delay);
  // The next frame of every stream ends that stream with UNAVAILABLE instead of an answer.
  void DropStreamsOnNextFrame();
  // Hellos that carry a resume token are refused with FAILED_PRECONDITION (the kept brain is not
  // theirs), as the real server refuses them.
  void set_refuse_resume(bool refuse);
  // Stops the server (live streams end); idempotent.
  void Shutdown();

  std::vector<brain::v1::Hello> hellos() const;
  // Each stream's x-robot-id metadata ("" when absent), in the order the streams opened.
  std::vector<std::string> robot_id_headers() const;
  // True once at least `n` Hellos arrived within `timeout`.
  bool WaitForHellos(int n, absl::Duration timeout) const;
  uint64_t frames_answered() const;

  grpc::Status Cycle(grpc::ServerContext* context,
                     grpc::ServerReaderWriter<brain::v1::CycleResponse,
                                              brain::v1::CycleRequest>* stream) override;

 private:
  brain::v1::MotorFrame Answer(const brain::v1::SensorFrame& frame, uint32_t motor_count,
                               uint64_t cycle) const;

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  mutable absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_);
  uint64_t drop_epoch_ ABSL_GUARDED_BY(mu_) = 0;  // a stream drops when this passes its own
  std::vector<brain::v1::Hello> hellos_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> robot_id_headers_ ABSL_GUARDED_BY(mu_);
  uint64_t frames_answered_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool refuse_resume_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace fieldbrain::testing
