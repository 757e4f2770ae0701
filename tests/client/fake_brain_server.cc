#include "tests/client/fake_brain_server.h"

#include <algorithm>
#include <memory>
#include <cmath>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"

namespace fieldbrain::testing {

using brain::v1::CycleRequest;
using brain::v1::CycleResponse;

std::unique_ptr<FakeBrainServer> FakeBrainServer::Start(int port) {
  auto fake = std::make_unique<FakeBrainServer>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                           &fake->port_);
  builder.RegisterService(fake.get());
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr || fake->port_ == 0) return nullptr;
  return fake;
}

FakeBrainServer::~FakeBrainServer() { Shutdown(); }

void FakeBrainServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || server_ == nullptr) return;
    shut_down_ = true;
  }
  // Live streams block in Read; a short deadline cancels them.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  server_->Wait();
}

void FakeBrainServer::set_delay(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  delay_ = delay;
}

void FakeBrainServer::set_refuse_resume(bool refuse) {
  absl::MutexLock lock(&mu_);
  refuse_resume_ = refuse;
}

void FakeBrainServer::DropStreamsOnNextFrame() {
  absl::MutexLock lock(&mu_);
  ++drop_epoch_;
}

std::vector<brain::v1::Hello> FakeBrainServer::hellos() const {
  absl::MutexLock lock(&mu_);
  return hellos_;
}

std::vector<std::string> FakeBrainServer::robot_id_headers() const {
  absl::MutexLock lock(&mu_);
  return robot_id_headers_;
}

bool FakeBrainServer::WaitForHellos(int n, absl::Duration timeout) const {
  const auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(hellos_.size()) >= n;
  };
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

uint64_t FakeBrainServer::frames_answered() const {
  absl::MutexLock lock(&mu_);
  return frames_answered_;
}

brain::v1::MotorFrame FakeBrainServer::Answer(const brain::v1::SensorFrame& frame,
                                              uint32_t motor_count, uint64_t cycle) const {
  brain::v1::MotorFrame out;
  out.set_seq(frame.seq());
  out.set_cycle(cycle);
  for (int i = 0; i < frame.values_size(); ++i) {
    const float v = frame.values(i);
    if (!(v >= -1.0f && v <= 1.0f)) {
      out.set_status(brain::v1::OUT_OF_RANGE);
      out.set_detail(absl::StrCat("value ", i, " is ", v, ", outside [-1, 1]"));
      out.mutable_values()->Resize(static_cast<int>(motor_count), 0.0f);
      return out;
    }
  }
  out.set_status(brain::v1::OK);
  for (uint32_t k = 0; k < motor_count; ++k) {
    out.add_values(0.5f * frame.values(static_cast<int>(k) % std::max(1, frame.values_size())));
  }
  out.set_confidence(0.75f);
  out.set_prediction_error(0.125f);
  return out;
}

grpc::Status FakeBrainServer::Cycle(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<CycleResponse, CycleRequest>* stream) {
  CycleRequest request;
  if (!stream->Read(&request) || !request.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "first request must be a Hello");
  }
  const brain::v1::Hello hello = request.hello();
  uint64_t my_epoch = 0;
  size_t session = 0;
  {
    absl::MutexLock lock(&mu_);
    hellos_.push_back(hello);
    const auto header = context->client_metadata().find("x-robot-id");
    robot_id_headers_.push_back(header == context->client_metadata().end()
                                    ? std::string()
                                    : std::string(header->second.data(), header->second.size()));
    session = hellos_.size();
    my_epoch = drop_epoch_;
    if (refuse_resume_ && !hello.resume_token().empty()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the kept brain is not this token's");
    }
  }
  CycleResponse welcome;
  auto* w = welcome.mutable_welcome();
  w->set_session_id(absl::StrCat("session-", session));
  w->set_resumed(!hello.resume_token().empty());
  w->set_engine("fake");
  w->set_resume_token(absl::StrCat("resume-", hello.profile().robot_id(), "-", session));
  w->set_seed(hello.seed() != 0 ? hello.seed() : 4242);
  w->mutable_field()->set_channels(16);
  if (!stream->Write(welcome)) return grpc::Status::OK;

  uint64_t cycle = 0;
  while (stream->Read(&request)) {
    if (!request.has_sensors()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "second Hello on one stream");
    }
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      if (drop_epoch_ != my_epoch) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "fake server dropped the stream");
      }
      delay = delay_;
    }
    if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
    CycleResponse response;
    *response.mutable_motors() =
        Answer(request.sensors(), hello.profile().motor_count(), ++cycle);
    if (!stream->Write(response)) break;
    absl::MutexLock lock(&mu_);
    ++frames_answered_;
  }
  return grpc::Status::OK;
}

}  // namespace fieldbrain::testing
