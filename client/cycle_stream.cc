#include "client/cycle_stream.h"

#include <utility>

namespace fieldbrain::client {

bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return !s.empty();
}

void CycleStream::Start(brain::v1::Brain::Stub* stub, brain::v1::CycleRequest hello,
                        const std::string& bearer_token) {
  if (!bearer_token.empty()) context_.AddMetadata("authorization", "Bearer " + bearer_token);
  // The key a gRPC proxy routes robots by (consistent hashing on x-robot-id), so a robot reaches the
  // daemon that holds its brain. Metadata must be printable ASCII; other ids go without it.
  const std::string& robot_id = hello.hello().profile().robot_id();
  if (IsPrintableAscii(robot_id)) context_.AddMetadata("x-robot-id", robot_id);
  stub->async()->Cycle(&context_, this);
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = std::move(hello);
    writing_ = true;
  }
  // The hold covers writes that Send() starts from the stepping thread, outside any reaction.
  AddHold();
  StartWrite(&in_flight_);
  StartRead(&response_);
  StartCall();
}

bool CycleStream::Send(brain::v1::CycleRequest request) {
  {
    absl::MutexLock lock(&mu_);
    if (reads_over_) return false;
    if (writing_) {
      queued_ = std::move(request);  // replaces an older queued frame: latest wins
      return true;
    }
    in_flight_ = std::move(request);
    writing_ = true;
  }
  // writing_ keeps the hold (and so OnDone) back until OnWriteDone for this write.
  StartWrite(&in_flight_);
  return true;
}

void CycleStream::OnWriteDone(bool ok) {
  bool release = false;
  bool write_next = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (ok && !reads_over_ && queued_.has_value()) {
      in_flight_ = std::move(*queued_);
      queued_.reset();
      writing_ = true;
      write_next = true;
    } else {
      queued_.reset();
      release = TakeHoldIfIdle();
    }
  }
  if (write_next) StartWrite(&in_flight_);
  if (release) RemoveHold();
}

void CycleStream::OnReadDone(bool ok) {
  if (ok) {
    switch (response_.kind_case()) {
      case brain::v1::CycleResponse::kWelcome:
        sink_->OnWelcome(response_.welcome());
        break;
      case brain::v1::CycleResponse::kMotors:
        sink_->OnMotors(response_.motors());
        break;
      case brain::v1::CycleResponse::KIND_NOT_SET:
        break;  // nothing to act on; a newer server may send kinds this client does not know
    }
    StartRead(&response_);
    return;
  }
  // The server ended the stream or it broke: no more reads, and no new writes.
  bool release = false;
  {
    absl::MutexLock lock(&mu_);
    reads_over_ = true;
    release = TakeHoldIfIdle();
  }
  if (release) RemoveHold();
}

bool CycleStream::TakeHoldIfIdle() {
  if (!reads_over_ || writing_ || hold_released_) return false;
  hold_released_ = true;
  return true;
}

void CycleStream::OnDone(const grpc::Status& status) {
  // Last touch of this object: the sink may destroy it as soon as this call starts returning.
  sink_->OnStreamDone(status);
}

}  // namespace fieldbrain::client
