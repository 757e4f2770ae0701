#include "client/tools/load_robot.h"

#include <cmath>
#include <utility>

namespace fieldbrain::sim {

void LoadWindow::Merge(const LoadWindow& other) {
  round_trip.Merge(other.round_trip);
  server_time.Merge(other.server_time);
  sent += other.sent;
  answered += other.answered;
  skipped += other.skipped;
  for (const auto& [name, n] : other.not_ok) not_ok[name] += n;
}

LoadRobot::LoadRobot(std::string robot_id, int sensor_count, int motor_count)
    : robot_id_(std::move(robot_id)), sensor_count_(sensor_count), motor_count_(motor_count) {}

void LoadRobot::Start(brain::v1::Brain::Stub* stub, const std::string& bearer_token) {
  context_.AddMetadata("x-robot-id", robot_id_);
  if (!bearer_token.empty()) context_.AddMetadata("authorization", "Bearer " + bearer_token);
  brain::v1::RobotProfile* profile = request_.mutable_hello()->mutable_profile();
  profile->set_robot_id(robot_id_);
  profile->set_sensor_count(static_cast<uint32_t>(sensor_count_));
  profile->set_motor_count(static_cast<uint32_t>(motor_count_));
  request_.mutable_hello()->set_fresh(true);  // a rerun must not trip over last run's kept brain
  stub->async()->Cycle(&context_, this);
  AddHold();  // until Close(): Tick() may write at any time before that
  {
    absl::MutexLock lock(&mu_);
    writing_ = true;
  }
  StartWrite(&request_);
  StartRead(&response_);
  StartCall();
}

bool LoadRobot::WaitWelcome(absl::Duration timeout) { return welcomed_.WaitForNotificationWithTimeout(timeout); }

void LoadRobot::Tick() {
  const absl::Time now = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || closing_ || !welcomed_.HasBeenNotified()) return;
    if (writing_) {
      ++window_.skipped;
      return;
    }
    writing_ = true;
    const uint64_t seq = next_seq_++;
    brain::v1::SensorFrame* frame = request_.mutable_sensors();
    frame->set_seq(seq);
    frame->clear_values();
    for (int i = 0; i < sensor_count_; ++i) {
      frame->add_values(static_cast<float>(0.8 * std::sin(0.07 * double(seq) + 0.5 * i)));
    }
    sent_at_[seq % kRing] = now;
    sent_seq_[seq % kRing] = seq;
    ++window_.sent;
  }
  StartWrite(&request_);
}

void LoadRobot::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) ended_ = true;
}

void LoadRobot::OnReadDone(bool ok) {
  if (!ok) {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    return;
  }
  const absl::Time now = absl::Now();
  switch (response_.kind_case()) {
    case brain::v1::CycleResponse::kWelcome:
      welcomed_.Notify();
      break;
    case brain::v1::CycleResponse::kMotors: {
      const brain::v1::MotorFrame& m = response_.motors();
      absl::MutexLock lock(&mu_);
      ++window_.answered;
      if (sent_seq_[m.seq() % kRing] == m.seq()) window_.round_trip.Record(now - sent_at_[m.seq() % kRing]);
      window_.server_time.Record(absl::Microseconds(m.server_time_us()));
      if (m.status() != brain::v1::OK) ++window_.not_ok[brain::v1::FrameStatus_Name(m.status())];
      break;
    }
    case brain::v1::CycleResponse::KIND_NOT_SET:
      break;  // a kind this tool does not know
  }
  StartRead(&response_);
}

void LoadRobot::OnWritesDoneDone(bool /*ok*/) {}

void LoadRobot::OnDone(const grpc::Status& status) {
  status_ = status;
  done_.Notify();
}

LoadWindow LoadRobot::TakeWindow() {
  absl::MutexLock lock(&mu_);
  return std::exchange(window_, LoadWindow());
}

bool LoadRobot::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

grpc::Status LoadRobot::Close(absl::Duration timeout) {
  bool half_close;
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    // A frame still being written finishes first: gRPC allows one write at a time, and the
    // half-close counts as one. A server that never takes it gets the call cancelled.
    cancel = !mu_.AwaitWithTimeout(absl::Condition(+[](bool* writing) { return !*writing; }, &writing_), timeout);
    half_close = !cancel && !ended_;
  }
  if (cancel) context_.TryCancel();
  if (half_close) StartWritesDone();
  RemoveHold();
  if (!done_.WaitForNotificationWithTimeout(timeout)) {
    context_.TryCancel();
    done_.WaitForNotification();
  }
  return status_;
}

}  // namespace fieldbrain::sim
