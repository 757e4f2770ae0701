// A Cycle stream over the raw generated stub (not the client library), for service tests.
// Every call is bounded by the context's deadline, so a broken server fails a test instead of
// hanging it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"

#include "brain/v1/brain.grpc.pb.h"

namespace fieldbrain::server::testing {

inline brain::v1::Hello MakeHello(const std::string& robot_id, uint32_t sensors = 4,
                                  uint32_t motors = 2) {
  brain::v1::Hello h;
  h.mutable_profile()->set_robot_id(robot_id);
  h.mutable_profile()->set_robot_type("test");
  h.mutable_profile()->set_sensor_count(sensors);
  h.mutable_profile()->set_motor_count(motors);
  return h;
}

inline brain::v1::CycleRequest HelloRequest(const brain::v1::Hello& hello) {
  brain::v1::CycleRequest r;
  *r.mutable_hello() = hello;
  return r;
}

inline brain::v1::CycleRequest FrameRequest(uint64_t seq, const std::vector<float>& values,
                                            std::optional<float> reward = std::nullopt,
                                            uint32_t deadline_us = 0) {
  brain::v1::CycleRequest r;
  brain::v1::SensorFrame* f = r.mutable_sensors();
  f->set_seq(seq);
  for (float v : values) f->add_values(v);
  if (reward) f->set_reward(*reward);
  f->set_deadline_us(deadline_us);
  return r;
}

class RawStream {
 public:
  // `bearer_token`, if not empty, goes out as "authorization: Bearer <token>".
  RawStream(brain::v1::Brain::Stub* stub, absl::Duration deadline = absl::Seconds(60),
            const std::string& bearer_token = "", const std::string& robot_id_header = "") {
    context_.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(absl::ToInt64Milliseconds(deadline)));
    if (!bearer_token.empty()) context_.AddMetadata("authorization", "Bearer " + bearer_token);
    if (!robot_id_header.empty()) context_.AddMetadata("x-robot-id", robot_id_header);
    stream_ = stub->Cycle(&context_);
  }

  bool Write(const brain::v1::CycleRequest& r) { return stream_->Write(r); }
  std::optional<brain::v1::CycleResponse> Read() {
    brain::v1::CycleResponse r;
    if (!stream_->Read(&r)) return std::nullopt;
    return r;
  }
  // Hello, then the Welcome (nullopt when the stream ended instead).
  std::optional<brain::v1::Welcome> Open(const brain::v1::Hello& hello) {
    if (!Write(HelloRequest(hello))) return std::nullopt;
    std::optional<brain::v1::CycleResponse> r = Read();
    if (!r || !r->has_welcome()) return std::nullopt;
    return r->welcome();
  }
  // One frame, one answer.
  std::optional<brain::v1::MotorFrame> Step(const brain::v1::CycleRequest& frame) {
    if (!Write(frame)) return std::nullopt;
    std::optional<brain::v1::CycleResponse> r = Read();
    if (!r || !r->has_motors()) return std::nullopt;
    return r->motors();
  }
  // Reads until the server ends the stream; returns its status.
  grpc::Status Finish() {
    brain::v1::CycleResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    return stream_->Finish();
  }
  // Half-close, drain the answers, get the status.
  grpc::Status Close() {
    stream_->WritesDone();
    return Finish();
  }
  void Cancel() { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<brain::v1::CycleRequest, brain::v1::CycleResponse>>
      stream_;
};

}  // namespace fieldbrain::server::testing
