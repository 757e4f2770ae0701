#include "server/cycle_stream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/brain_service.h"
#include "server/frame_validator.h"
#include "server/profile_validator.h"
#include "server/log.h"

namespace fieldbrain::server {
namespace {

constexpr char kShuttingDown[] = "server is shutting down";

// Open Cycle streams allowed at once: every robot slot, room for each robot to reconnect while
// its old stream is still ending, and a margin. More are refused, so a flood of connections that
// never finish their Hello cannot exhaust the daemon's memory.
int MaxOpenStreams(uint32_t max_robots) { return 2 * static_cast<int>(max_robots) + 16; }

// The brain_frames_rejected_total reason of a status; nullopt for the two that are not
// rejections counted there (OK; SUPERSEDED has brain_frames_superseded_total). Exhaustive: a new
// status must be given its own reason here.
std::optional<telemetry::RejectReason> ReasonOf(brain::v1::FrameStatus status) {
  switch (status) {
    case brain::v1::OK: return std::nullopt;
    case brain::v1::SUPERSEDED: return std::nullopt;
    case brain::v1::WRONG_SENSOR_COUNT: return telemetry::RejectReason::kWrongSensorCount;
    case brain::v1::NON_FINITE: return telemetry::RejectReason::kNonFinite;
    case brain::v1::OUT_OF_RANGE: return telemetry::RejectReason::kOutOfRange;
    case brain::v1::DEADLINE_EXCEEDED: return telemetry::RejectReason::kDeadlineExceeded;
    case brain::v1::SHUTTING_DOWN: return telemetry::RejectReason::kShuttingDown;
    case brain::v1::INTERNAL_ERROR: return telemetry::RejectReason::kEngineError;
    case brain::v1::RATE_LIMITED: return telemetry::RejectReason::kRateLimited;
    case brain::v1::FRAME_STATUS_UNSPECIFIED: return telemetry::RejectReason::kUnspecified;
    case brain::v1::FrameStatus_INT_MIN_SENTINEL_DO_NOT_USE_:
    case brain::v1::FrameStatus_INT_MAX_SENTINEL_DO_NOT_USE_:
      return telemetry::RejectReason::kUnspecified;
  }
  return telemetry::RejectReason::kUnspecified;  // a value outside the enum (none is ever sent)
}

}  // namespace

CycleStream::CycleStream(BrainService* service, StreamId id, std::string authorization,
                         std::optional<std::string> robot_id_header)
    : service_(service),
      id_(id),
      authorization_(std::move(authorization)),
      robot_id_header_(std::move(robot_id_header)) {
  service_->registry().Add(this);
  const int open = service_->registry().size();
  const int max_open = MaxOpenStreams(service_->deps().limits.max_robots());
  absl::MutexLock lock(&mu_);
  if (service_->shutting_down()) {
    RequestFinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, kShuttingDown), true);
    MaybeFinishLocked();
    return;
  }
  if (std::optional<grpc::Status> failure = service_->engine_failure(); failure.has_value()) {
    RequestFinishLocked(*std::move(failure), true);
    MaybeFinishLocked();
    return;
  }
  if (open > max_open) {
    RequestFinishLocked(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                     absl::StrCat("too many open streams (", max_open, ")")),
                        true);
    MaybeFinishLocked();
    return;
  }
  MaybeReadLocked();
}

void CycleStream::OnReadDone(bool ok) {
  StreamPhase phase;
  // Parsed outside mu_: only the read path touches request_bytes_ and request_.
  bool parsed = false;
  if (ok) {
    ++requests_read_;
    request_.Clear();
    parsed = grpc::SerializationTraits<brain::v1::CycleRequest>::Deserialize(&request_bytes_, &request_).ok();
  }
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {  // the client half-closed, or the stream broke
      read_busy_ = false;
      read_closed_ = true;
      RequestFinishLocked(grpc::Status::OK, false);
      MaybeFinishLocked();
      return;
    }
    if (!parsed) {
      read_busy_ = false;
      RequestFinishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                       absl::StrCat("request ", requests_read_,
                                                    " of this stream is not a brain.v1.CycleRequest "
                                                    "(undecodable protobuf)")),
                          true);
      MaybeFinishLocked();
      return;
    }
    if (EndingOrOver(phase_)) {  // ending anyway; a frame caught by a shutdown still gets its answer
      if (shutting_down_ && phase_ == StreamPhase::kEnding && slot_ >= 0 && request_.has_sensors()) {
        AnswerHereLocked(request_.sensors().seq(), brain::v1::SHUTTING_DOWN, kShuttingDown,
                         Clock::now());
      }
      read_busy_ = false;
      MaybeFinishLocked();
      return;
    }
    phase = phase_;
    AdvanceLocked(StreamEvent::kHelloRead);  // a Hello's checks follow; only running takes frames
    handling_ = true;
  }
  if (phase == StreamPhase::kAwaitingHello) {
    HandleHello();
  } else if (request_.has_sensors()) {
    HandleFrame(request_.sensors());
  } else {
    absl::MutexLock lock(&mu_);
    read_busy_ = false;
    handling_ = false;
    RequestFinishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                     request_.has_hello()
                                         ? "Hello sent twice on one stream"
                                         : "request carries neither a Hello nor a SensorFrame"),
                        true);
    MaybeFinishLocked();
  }
}

void CycleStream::HandleHello() {
  auto fail = [this](const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    read_busy_ = false;
    handling_ = false;
    RequestFinishLocked(status, true);
    MaybeFinishLocked();
  };
  if (!request_.has_hello()) {
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "first message must be Hello"));
    return;
  }
  const brain::v1::Hello& hello = request_.hello();
  const ServiceDeps& deps = service_->deps();
  if (absl::Status s = ValidateProfile(hello.profile(), deps.limits); !s.ok()) {
    fail(ToGrpcStatus(s));
    return;
  }
  // A proxy routed this stream by its x-robot-id header: a Hello for another robot would land its
  // brain on a daemon the proxy does not send that robot to.
  if (robot_id_header_.has_value() && *robot_id_header_ != hello.profile().robot_id()) {
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("the x-robot-id header \"", *robot_id_header_, "\" differs from the Hello's robot_id \"",
                                   hello.profile().robot_id(), "\"")));
    return;
  }
  // Before the brain directory: a caller that may not drive this id learns nothing of its brain,
  // and `fresh` discards a kept brain only for one that may.
  if (deps.access != nullptr) {
    if (absl::Status s = deps.access->CheckRobot(authorization_, hello.profile().robot_id()); !s.ok()) {
      fail(ToGrpcStatus(s));
      return;
    }
  }
  if (service_->shutting_down()) {
    fail(grpc::Status(grpc::StatusCode::UNAVAILABLE, kShuttingDown));
    return;
  }
  if (std::optional<grpc::Status> failure = service_->engine_failure(); failure.has_value()) {
    fail(*failure);
    return;
  }
  // The rest may read a checkpoint from disk: off this gRPC thread. The hold keeps the stream until
  // OnAdmitted has run; request_ (the Hello) is not read over meanwhile (read_busy_ stays set).
  Hold hold;
  {
    absl::MutexLock lock(&mu_);
    hold = TakeHoldLocked();
  }
  service_->admission().Admit(deps, hello, id_, [this, hold = std::move(hold)](absl::StatusOr<Admission> admission) {
    OnAdmitted(std::move(admission));
  });
}

void CycleStream::OnAdmitted(absl::StatusOr<Admission> admission) {
  if (!admission.ok()) {
    absl::MutexLock lock(&mu_);
    read_busy_ = false;
    handling_ = false;
    RequestFinishLocked(ToGrpcStatus(admission.status()), true);
    MaybeFinishLocked();
    return;
  }
  const ServiceDeps& deps = service_->deps();
  const brain::v1::Hello& hello = request_.hello();
  SessionGrant& grant = admission->grant;
  Hold hold;  // for the creation callback
  BrainSpec spec;
  spec.seed = grant.seed;
  spec.sensor_count = static_cast<int>(hello.profile().sensor_count());
  spec.motor_count = static_cast<int>(hello.profile().motor_count());
  {
    absl::MutexLock lock(&mu_);
    robot_id_ = hello.profile().robot_id();
    attached_ = true;
    sensor_count_ = spec.sensor_count;
    motor_count_ = spec.motor_count;
    read_busy_ = false;  // request_ is no longer needed
    handling_ = false;   // from here on, outstanding_ holds back the end until the Welcome
    if (!grant.needs_brain()) {
      slot_ = grant.slot;
      AdvanceLocked(StreamEvent::kGrantedKeptBrain);
      if (!drop_answers_) QueueWelcomeLocked(grant, deps.scheduler->brain_cycle(slot_));
      MaybeReadLocked();
      MaybeFinishLocked();
      return;
    }
    AdvanceLocked(StreamEvent::kGrantedBrainToMake);
    ++outstanding_;
    hold = TakeHoldLocked();
  }
  auto created = [this, g = std::move(grant), hold = std::move(hold)](absl::StatusOr<int> slot) mutable {
    OnBrainCreated(std::move(g), std::move(slot));
  };
  if (admission->restore.has_value()) {
    deps.scheduler->CreateBrainFrom(spec, std::move(admission->restore->snapshot), std::move(created));
  } else {
    deps.scheduler->CreateBrain(spec, std::move(created));
  }
}

void CycleStream::OnBrainCreated(SessionGrant grant, absl::StatusOr<int> slot) {
  BrainDirectory& directory = *service_->deps().directory;
  {
    std::string robot_id;
    {
      absl::MutexLock lock(&mu_);
      robot_id = robot_id_;
    }
    if (slot.ok()) {
      directory.CompleteCreate(robot_id, id_, *slot);
    } else {
      directory.AbortCreate(robot_id, id_);
    }
  }
  {
    absl::MutexLock lock(&mu_);
    --outstanding_;
    if (!slot.ok()) {
      attached_ = false;
      RequestFinishLocked(ToGrpcStatus(slot.status()), true);
    } else {
      slot_ = *slot;
      AdvanceLocked(StreamEvent::kBrainMade);
      grant.slot = *slot;
      // 0 for a new brain; a restored one continues from its checkpoint's cycle.
      if (!drop_answers_) QueueWelcomeLocked(grant, service_->deps().scheduler->brain_cycle(*slot));
      MaybeReadLocked();
    }
    MaybeFinishLocked();
  }
}

void CycleStream::HandleFrame(const brain::v1::SensorFrame& frame) {
  const Clock::time_point arrival = Clock::now();
  const ServiceDeps& deps = service_->deps();
  int sensor_count;
  int slot;
  const std::string* robot_id;  // fixed once the Hello attached the stream, before any frame
  {
    absl::MutexLock lock(&mu_);
    sensor_count = sensor_count_;
    slot = slot_;
    robot_id = &robot_id_;
    if (shutting_down_) {
      AnswerHereLocked(frame.seq(), brain::v1::SHUTTING_DOWN, kShuttingDown, arrival);
      EndHandlingLocked();
      return;
    }
  }
  if (!service_->rate_limits().TryTake(*robot_id, arrival)) {
    if (deps.metrics != nullptr) deps.metrics->RecordRejected(telemetry::RejectReason::kRateLimited);
    absl::MutexLock lock(&mu_);
    AnswerHereLocked(frame.seq(), brain::v1::RATE_LIMITED,
                     absl::StrCat("over ", deps.max_frame_hz, " frames/s (burst ", deps.frame_burst,
                                  "): not run"),
                     arrival);
    EndHandlingLocked();
    return;
  }
  FrameVerdict verdict = ValidateFrame(frame, sensor_count);
  if (!verdict.ok()) {
    if (deps.metrics != nullptr) {
      if (const auto reason = ReasonOf(verdict.status); reason.has_value()) deps.metrics->RecordRejected(*reason);
    }
    absl::MutexLock lock(&mu_);
    AnswerHereLocked(frame.seq(), verdict.status, verdict.detail, arrival);
    EndHandlingLocked();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    ++outstanding_;
    ++holds_;
  }
  QueuedFrame queued;
  queued.seq = frame.seq();
  queued.values = std::span<const float>(frame.values().data(), static_cast<size_t>(frame.values_size()));
  queued.reward = frame.has_reward() ? frame.reward() : 0.0f;
  queued.arrival = arrival;
  queued.deadline_us = frame.deadline_us();
  // Not under mu_: a superseded older frame of this stream is answered inline.
  deps.scheduler->Submit(slot, this, queued);
  absl::MutexLock lock(&mu_);
  EndHandlingLocked();
}

void CycleStream::EndHandlingLocked() {
  read_busy_ = false;
  handling_ = false;
  MaybeReadLocked();
  MaybeFinishLocked();
}

void CycleStream::Deliver(const FrameAnswer& answer) {
  {
    absl::MutexLock lock(&mu_);
    --outstanding_;
    if (!drop_answers_) QueueAnswerLocked(answer);
    MaybeReadLocked();
    MaybeFinishLocked();
  }
  Release();
}

void CycleStream::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  last_write_done_at_ = absl::Now();
  if (grpc::ByteBuffer* next = outbound_.WriteDone(ok); next != nullptr) StartWrite(next);
  if (!ok) {  // the stream is broken; nothing more can be written
    RequestFinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"), true);
  }
  MaybeReadLocked();
  MaybeFinishLocked();
}

void CycleStream::OnCancel() {
  absl::MutexLock lock(&mu_);
  RequestFinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"), true);
  MaybeFinishLocked();
}

void CycleStream::OnDone() {
  std::string robot_id;
  bool attached;
  {
    absl::MutexLock lock(&mu_);
    robot_id = robot_id_;
    attached = attached_;
  }
  // The session outlives the stream: its brain is kept for a resume (or released at once).
  if (attached) service_->deps().directory->Detach(robot_id, id_, absl::Now());
  Release();
}

void CycleStream::BeginShutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  // Answers still owed (pending frames come back SHUTTING_DOWN) are written before the end.
  RequestFinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, kShuttingDown), false);
  MaybeFinishLocked();
}

void CycleStream::EndWith(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  RequestFinishLocked(status, false);
  MaybeFinishLocked();
}

void CycleStream::RecheckAccess() {
  const AccessControl* access = service_->deps().access;
  if (access == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (!attached_ || EndingOrOver(phase_)) return;
  if (absl::Status s = access->CheckRobot(authorization_, robot_id_); !s.ok()) {
    RequestFinishLocked(grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                                     absl::StrCat("access revoked by a reload of the tokens file: ", s.message())),
                        false);
    MaybeFinishLocked();
  }
}

void CycleStream::ExpireIfSilent(absl::Time now, absl::Duration hello_limit, absl::Duration frame_limit) {
  absl::MutexLock lock(&mu_);
  if (handling_ || EndingOrOver(phase_)) return;
  if (phase_ == StreamPhase::kAwaitingHello && now - opened_ >= hello_limit) {
    RequestFinishLocked(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                     absl::StrCat("no Hello within ", absl::FormatDuration(hello_limit))),
                        true);
  } else if (phase_ == StreamPhase::kRunning && frame_limit > absl::ZeroDuration() && read_busy_ && outstanding_ == 0 &&
             outbound_.queued() == 0 && now - std::max(read_armed_at_, last_write_done_at_) >= frame_limit) {
    // Silent: a read waits, and the daemon owes nothing (a robot that waits for each answer
    // before its next frame is not idle while its brain runs or its answer is being written).
    // Every answer owed is written first: the robot may still be there to read them.
    RequestFinishLocked(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                     absl::StrCat("no SensorFrame for ", absl::FormatDuration(frame_limit),
                                                  " (--stream_idle_timeout_s); the brain is kept: "
                                                  "reconnect with the resume token")),
                        false);
  } else {
    return;
  }
  MaybeFinishLocked();
}

std::optional<CycleStream::Hold> CycleStream::TryHold() {
  absl::MutexLock lock(&mu_);
  if (holds_ == 0) return std::nullopt;
  return TakeHoldLocked();
}

CycleStream::Hold CycleStream::TakeHoldLocked() {
  ++holds_;
  return Hold(this);
}

void CycleStream::Release() {
  bool last;
  {
    absl::MutexLock lock(&mu_);
    last = --holds_ == 0;
  }
  if (!last) return;
  service_->registry().Remove(this);
  delete this;  // the reactor owns itself (gRPC callback API): nobody refers to it any more
}

void CycleStream::RequestFinishLocked(grpc::Status status, bool drop) {
  if (drop && !drop_answers_) {
    drop_answers_ = true;
    outbound_.DropQueued();
  }
  if (EndingOrOver(phase_)) return;
  AdvanceLocked(StreamEvent::kEndRequested);
  finish_status_ = std::move(status);
}

void CycleStream::AdvanceLocked(StreamEvent event) { phase_ = NextPhase(phase_, event); }

void CycleStream::MaybeFinishLocked() {
  if (phase_ != StreamPhase::kEnding || outbound_.writing() || handling_) return;
  // A normal end writes every owed answer first; the scheduler's are owed until delivered.
  if (!drop_answers_ && (outbound_.queued() > 0 || outstanding_ > 0)) return;
  AdvanceLocked(StreamEvent::kFinishCalled);
  // Detach now rather than at OnDone, so a robot reconnecting right after an error finds its id
  // free sooner (OnDone detaches again; that is a no-op).
  if (attached_) {
    service_->deps().directory->Detach(robot_id_, id_, absl::Now());
    // The robot went away: its brain to disk now, not only when the kept brain expires.
    if (service_->deps().checkpointer != nullptr && slot_ >= 0) service_->deps().scheduler->SnapshotSlot(slot_);
  }
  Finish(finish_status_);
}

void CycleStream::MaybeReadLocked() {
  if (read_busy_ || read_closed_ || !ReadsIn(phase_)) return;
  // Room for every answer this read may cause.
  if (outbound_.queued() + outstanding_ >= OutboundRing::kCapacity) return;
  read_busy_ = true;
  read_armed_at_ = absl::Now();
  StartRead(&request_bytes_);
}

brain::v1::CycleResponse* CycleStream::NextEntryLocked() {
  if (phase_ == StreamPhase::kFinished) return nullptr;  // a write now would touch a finished call
  brain::v1::CycleResponse* entry = outbound_.Next();
  if (entry == nullptr) LogError("stream ", id_, ": answer ring full, answer dropped");
  return entry;
}

void CycleStream::PushEntryLocked() {
  if (grpc::ByteBuffer* bytes = outbound_.Push(); bytes != nullptr) StartWrite(bytes);
}

void CycleStream::QueueWelcomeLocked(const SessionGrant& grant, uint64_t cycle) {
  brain::v1::CycleResponse* entry = NextEntryLocked();
  if (entry == nullptr) return;
  const ServiceDeps& deps = service_->deps();
  brain::v1::Welcome* w = entry->mutable_welcome();
  w->set_session_id(grant.session_id);
  w->set_resumed(grant.resumed);
  w->set_cycle(cycle);
  service_->FillFieldShape(w->mutable_field());
  w->set_engine(deps.scheduler->facts().kind);
  *w->mutable_limits() = deps.limits;
  w->set_resume_token(grant.resume_token);
  w->set_seed(grant.seed);
  PushEntryLocked();
}

void CycleStream::QueueAnswerLocked(const FrameAnswer& a) {
  brain::v1::CycleResponse* entry = NextEntryLocked();
  if (entry == nullptr) return;
  // The entry stays a MotorFrame after its first use, so refilling it allocates nothing.
  brain::v1::MotorFrame* m = entry->mutable_motors();
  m->set_seq(a.seq);
  auto* values = m->mutable_values();
  values->Resize(motor_count_, 0.0f);
  const bool ok = a.status == brain::v1::OK;
  for (int k = 0; k < motor_count_; ++k) {
    values->Set(k, ok && k < static_cast<int>(a.motors.size()) ? a.motors[k] : 0.0f);
  }
  m->set_confidence(a.confidence);
  m->set_prediction_error(a.prediction_error);
  m->set_status(a.status);
  if (a.detail.empty()) {
    m->clear_detail();
  } else {
    m->mutable_detail()->assign(a.detail.data(), a.detail.size());
  }
  const Clock::duration spent = Clock::now() - a.arrival;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(spent).count();
  m->set_server_time_us(static_cast<uint32_t>(
      std::clamp<int64_t>(us, 0, std::numeric_limits<uint32_t>::max())));
  m->set_cycle(a.cycle);
  if (ok && service_->deps().metrics != nullptr) {
    service_->deps().metrics->RecordCycle(std::chrono::duration<double>(spent).count());
  }
  PushEntryLocked();
}

void CycleStream::AnswerHereLocked(uint64_t seq, brain::v1::FrameStatus status,
                                   std::string_view detail, Clock::time_point arrival) {
  if (drop_answers_) return;
  FrameAnswer a;
  a.seq = seq;
  a.status = status;
  a.detail = detail;
  a.cycle = slot_ >= 0 ? service_->deps().scheduler->brain_cycle(slot_) : 0;
  a.arrival = arrival;
  QueueAnswerLocked(a);
}

}  // namespace fieldbrain::server
