#include "client/brain_client.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <utility>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.grpc.pb.h"
#include "client/cycle_stream.h"
#include "client/session_recording.h"

namespace fieldbrain::client {
namespace {

using brain::v1::CycleRequest;
using brain::v1::MotorFrame;
using brain::v1::Welcome;
using SteadyClock = std::chrono::steady_clock;

std::string GrpcStatusText(const grpc::Status& status) {
  // grpc::StatusCode and absl::StatusCode share their numbering.
  std::string text(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
  if (!status.error_message().empty()) absl::StrAppend(&text, ": ", status.error_message());
  return text;
}

absl::Status ValidateOptions(const ClientOptions& o) {
  const auto& p = o.profile;
  if (o.target.empty()) return absl::InvalidArgumentError("ClientOptions.target is empty");
  if (p.robot_id().empty() || p.robot_id().size() > 128) {
    return absl::InvalidArgumentError("profile.robot_id must be 1-128 bytes");
  }
  if (p.sensor_count() < 1 || p.motor_count() < 1) {
    return absl::InvalidArgumentError("profile.sensor_count and motor_count must be >= 1");
  }
  if (p.sensor_names_size() != 0 && p.sensor_names_size() != static_cast<int>(p.sensor_count())) {
    return absl::InvalidArgumentError(absl::StrCat("profile has ", p.sensor_names_size(),
                                                   " sensor names for ", p.sensor_count(),
                                                   " sensors"));
  }
  if (p.motor_names_size() != 0 && p.motor_names_size() != static_cast<int>(p.motor_count())) {
    return absl::InvalidArgumentError(absl::StrCat("profile has ", p.motor_names_size(),
                                                   " motor names for ", p.motor_count(),
                                                   " motors"));
  }
  if (o.initial_backoff <= absl::ZeroDuration() || o.max_backoff < o.initial_backoff) {
    return absl::InvalidArgumentError("need 0 < initial_backoff <= max_backoff");
  }
  return absl::OkStatus();
}

// HTTP/2 keepalive: ping the server after 10 s without traffic and give the link up when the ack
// is 5 s late. A server (or Wi-Fi) that vanishes without closing TCP is then noticed within about
// 15 s and the reconnect loop starts, instead of the stream looking alive for as long as TCP
// takes (hours when nothing is written). Our server accepts pings this often
// (server/brain_server.h).
constexpr int kKeepaliveTimeMs = 10'000;
constexpr int kKeepaliveTimeoutMs = 5'000;

int ToMillisInt(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d),
                                            std::numeric_limits<int>::max()));
}

}  // namespace

const char* StopCauseName(StopCause cause) {
  switch (cause) {
    case StopCause::kNone: return "none";
    case StopCause::kDeadline: return "deadline";
    case StopCause::kLinkDown: return "link_down";
    case StopCause::kServer: return "server";
    case StopCause::kBadInput: return "bad_input";
    case StopCause::kClosed: return "closed";
  }
  return "unknown";
}

class BrainClient::Impl final : public CycleStream::Sink {
 public:
  Impl(ClientOptions options, std::shared_ptr<grpc::Channel> channel,
       std::unique_ptr<SessionRecorder> recorder)
      : options_(std::move(options)),
        stub_(brain::v1::Brain::NewStub(std::move(channel))),
        recorder_(std::move(recorder)) {}

  ~Impl() override { Close(); }

  void StartThread() { thread_ = std::thread([this] { Run(); }); }

  absl::Status WaitConnected(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    const absl::Time end = absl::Now() + timeout;
    while (!connected_ && !closing_) {
      if (cv_.WaitWithDeadline(&mu_, end)) break;
    }
    if (closing_) return absl::FailedPreconditionError("client is closed");
    if (connected_) return absl::OkStatus();
    return absl::DeadlineExceededError(absl::StrCat("not connected to ", options_.target,
                                                    " within ", absl::FormatDuration(timeout),
                                                    "; last link error: ", link_error_));
  }

  StepResult Step(std::span<const float> sensors, std::optional<float> reward,
                  absl::Duration deadline);

  bool connected() const {
    absl::MutexLock lock(&mu_);
    return connected_;
  }

  std::optional<Welcome> welcome() const {
    absl::MutexLock lock(&mu_);
    return welcome_;
  }

  void Close() {
    absl::MutexLock close_lock(&close_mu_);  // serialises concurrent Close calls around join
    std::shared_ptr<CycleStream> stream;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
      stream = stream_;
      cv_.SignalAll();
    }
    if (stream != nullptr) stream->Cancel();
    if (thread_.joinable()) thread_.join();
    // Every stream has ended, so nothing records any more: write out and close the file.
    if (recorder_ != nullptr) recorder_->Close();
  }

  // CycleStream::Sink: called on gRPC threads.
  void OnWelcome(const Welcome& welcome) override {
    if (recorder_ != nullptr) recorder_->RecordWelcome(welcome);
    absl::MutexLock lock(&mu_);
    welcome_ = welcome;
    connected_ = true;
    welcomed_on_stream_ = true;
    resume_refused_ = false;
    link_error_.clear();
    cv_.SignalAll();
  }

  void OnMotors(const MotorFrame& frame) override {
    if (recorder_ != nullptr) recorder_->RecordMotors(frame);  // late ones too: they were answered
    absl::MutexLock lock(&mu_);
    // Only the frame the stepping thread is waiting for counts; late ones are dropped.
    if (awaiting_seq_ != 0 && frame.seq() == awaiting_seq_ && !reply_.has_value()) {
      reply_ = frame;
      cv_.SignalAll();
    }
  }

  void OnStreamDone(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    connected_ = false;
    stream_done_ = true;
    link_error_ = GrpcStatusText(status);
    if (!welcomed_on_stream_ && presented_token_ &&
        status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      resume_refused_ = true;
    }
    ++link_epoch_;
    cv_.SignalAll();
  }

  absl::Status recording_status() const {
    return recorder_ != nullptr ? recorder_->status() : absl::OkStatus();
  }

 private:
  void Run();
  CycleRequest MakeHello() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills `r` as a safe stop and stamps its round trip.
  static StepResult& SafeStop(StepResult& r, StopCause cause, std::string reason);

  const ClientOptions options_;
  const std::unique_ptr<brain::v1::Brain::Stub> stub_;
  const std::unique_ptr<SessionRecorder> recorder_;  // null unless record_path is set
  std::thread thread_;
  absl::Mutex close_mu_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled on every state change below
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  bool welcomed_on_stream_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<CycleStream> stream_ ABSL_GUARDED_BY(mu_);
  std::optional<Welcome> welcome_ ABSL_GUARDED_BY(mu_);
  std::string link_error_ ABSL_GUARDED_BY(mu_) = "not connected yet";
  uint64_t link_epoch_ ABSL_GUARDED_BY(mu_) = 0;  // counts ended streams
  uint64_t awaiting_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<MotorFrame> reply_ ABSL_GUARDED_BY(mu_);
  // The server ended a stream that presented the resume token before welcoming it: the kept
  // brain is gone (say, a restart without checkpoints), so later Hellos ask for a new one instead
  // of being refused forever. Cleared by the next Welcome.
  bool resume_refused_ ABSL_GUARDED_BY(mu_) = false;
  bool presented_token_ ABSL_GUARDED_BY(mu_) = false;  // the current stream's Hello carried one
  uint64_t last_seq_ = 0;  // the stepping thread's own
};

CycleRequest BrainClient::Impl::MakeHello() {
  CycleRequest request;
  auto* hello = request.mutable_hello();
  *hello->mutable_profile() = options_.profile;
  if (welcome_.has_value() && !resume_refused_) {
    // Reconnect: ask for the same brain back, with the seed it runs on.
    hello->set_resume_token(welcome_->resume_token());
    hello->set_seed(welcome_->seed());
    hello->set_fresh(false);
  } else if (!welcome_.has_value() && !resume_refused_ && !options_.resume_token.empty()) {
    // First connection with a token kept from an earlier run.
    hello->set_resume_token(options_.resume_token);
    hello->set_seed(options_.seed);
    hello->set_fresh(false);
  } else {
    hello->set_seed(options_.seed);
    // `fresh` only until the first Welcome: a reconnect never throws a brain away.
    hello->set_fresh(options_.fresh && !welcome_.has_value());
  }
  presented_token_ = !hello->resume_token().empty();
  return request;
}

void BrainClient::Impl::Run() {
  absl::BitGen jitter;
  absl::Duration backoff = options_.initial_backoff;
  for (;;) {
    auto stream = std::make_shared<CycleStream>(this);
    CycleRequest hello;
    {
      absl::MutexLock lock(&mu_);
      if (closing_) return;
      stream_ = stream;
      stream_done_ = false;
      welcomed_on_stream_ = false;
      hello = MakeHello();
    }
    if (recorder_ != nullptr) recorder_->RecordHello(hello.hello());
    stream->Start(stub_.get(), std::move(hello), options_.bearer_token);
    bool was_welcomed = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&stream_done_));  // Close() cancels the stream, so this ends
      stream_.reset();
      was_welcomed = welcomed_on_stream_;
    }
    stream.reset();  // OnDone has run; a Step may still hold a reference, which is fine

    if (was_welcomed) backoff = options_.initial_backoff;  // the link worked: start over
    const absl::Duration delay = backoff * absl::Uniform(jitter, 0.8, 1.2);
    backoff = std::min(backoff * 2, options_.max_backoff);
    absl::MutexLock lock(&mu_);
    const absl::Time end = absl::Now() + delay;
    while (!closing_) {
      if (cv_.WaitWithDeadline(&mu_, end)) break;
    }
    if (closing_) return;
  }
}

StepResult& BrainClient::Impl::SafeStop(StepResult& r, StopCause cause, std::string reason) {
  std::fill(r.motors.begin(), r.motors.end(), 0.0f);
  r.safe_stop = true;
  r.cause = cause;
  r.reason = std::move(reason);
  return r;
}

StepResult BrainClient::Impl::Step(std::span<const float> sensors, std::optional<float> reward,
                                   absl::Duration deadline) {
  const auto start = SteadyClock::now();
  const auto finish = [start](StepResult& r) -> StepResult {
    r.round_trip = absl::FromChrono(SteadyClock::now() - start);
    return std::move(r);
  };
  StepResult r;
  r.motors.assign(options_.profile.motor_count(), 0.0f);
  r.seq = ++last_seq_;

  if (sensors.size() != options_.profile.sensor_count()) {
    return finish(SafeStop(r, StopCause::kBadInput,
                           absl::StrCat("sensor count ", sensors.size(),
                                        " differs from the profile's ",
                                        options_.profile.sensor_count())));
  }
  if (deadline <= absl::ZeroDuration()) {
    return finish(SafeStop(r, StopCause::kBadInput, "deadline must be positive"));
  }
  // What the wire can carry (deadline_us is a uint32). It also keeps `start + deadline` below
  // the steady clock's range: InfiniteDuration() would overflow it (undefined behaviour).
  deadline = std::min(deadline, kMaxStepDeadline);

  CycleRequest request;
  auto* frame = request.mutable_sensors();
  frame->set_seq(r.seq);
  frame->mutable_values()->Add(sensors.begin(), sensors.end());
  if (reward.has_value()) frame->set_reward(*reward);
  frame->set_capture_time_us(absl::ToUnixMicros(absl::Now()));
  frame->set_deadline_us(static_cast<uint32_t>(std::clamp<int64_t>(
      absl::ToInt64Microseconds(deadline), 1, std::numeric_limits<uint32_t>::max())));

  std::shared_ptr<CycleStream> stream;
  uint64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (closing_) return finish(SafeStop(r, StopCause::kClosed, "client closed"));
    if (!connected_) {
      return finish(SafeStop(r, StopCause::kLinkDown, absl::StrCat("link down: ", link_error_)));
    }
    awaiting_seq_ = r.seq;
    reply_.reset();
    stream = stream_;
    epoch = link_epoch_;
  }
  // Recorded before it is sent, so that its answer never precedes it in the file.
  if (recorder_ != nullptr) recorder_->RecordSensors(request.sensors());
  const bool sent = stream->Send(std::move(request));

  std::optional<MotorFrame> reply;
  std::string link_error;  // set when the stream ended while this Step waited
  bool closed = false;
  {
    absl::MutexLock lock(&mu_);
    // When Send found the stream over, OnStreamDone is imminent and brings the real status.
    const auto end = start + absl::ToChronoNanoseconds(deadline);
    while (!reply_.has_value() && link_epoch_ == epoch && !closing_) {
      const auto left = end - SteadyClock::now();
      if (left <= SteadyClock::duration::zero()) break;
      cv_.WaitWithTimeout(&mu_, absl::FromChrono(left));
    }
    reply = std::move(reply_);
    reply_.reset();
    awaiting_seq_ = 0;
    closed = closing_;
    if (link_epoch_ != epoch) {
      link_error = link_error_;
    } else if (!sent) {
      link_error = "stream ended";
    }
  }

  if (!reply.has_value()) {
    if (closed) return finish(SafeStop(r, StopCause::kClosed, "client closed"));
    if (!link_error.empty()) {
      return finish(SafeStop(r, StopCause::kLinkDown, absl::StrCat("link down: ", link_error)));
    }
    return finish(SafeStop(r, StopCause::kDeadline,
                           absl::StrCat("deadline of ", absl::FormatDuration(deadline),
                                        " passed")));
  }

  r.status = reply->status();
  r.confidence = reply->confidence();
  r.prediction_error = reply->prediction_error();
  r.cycle = reply->cycle();
  if (reply->status() != brain::v1::OK) {
    std::string reason = absl::StrCat("server: ", brain::v1::FrameStatus_Name(reply->status()));
    if (!reply->detail().empty()) absl::StrAppend(&reason, ": ", reply->detail());
    return finish(SafeStop(r, StopCause::kServer, std::move(reason)));
  }
  if (reply->values_size() != static_cast<int>(r.motors.size())) {
    return finish(SafeStop(r, StopCause::kServer,
                           absl::StrCat("server: sent ", reply->values_size(), " motors, profile has ",
                                        r.motors.size())));
  }
  for (int k = 0; k < reply->values_size(); ++k) {
    const float v = reply->values(k);
    if (!std::isfinite(v)) {
      return finish(SafeStop(r, StopCause::kServer,
                             absl::StrCat("server: motor ", k, " is not finite")));
    }
    r.motors[k] = std::clamp(v, -1.0f, 1.0f);  // the actuators never see more than full scale
  }
  r.safe_stop = false;
  r.cause = StopCause::kNone;
  return finish(r);
}

BrainClient::BrainClient(Passkey, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BrainClient::~BrainClient() = default;

absl::StatusOr<std::unique_ptr<BrainClient>> BrainClient::Create(ClientOptions options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff (default 1 s .. 120 s) would override ours while the channel
  // is in TRANSIENT_FAILURE, so it gets the same bounds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ToMillisInt(options.initial_backoff));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, ToMillisInt(options.initial_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, ToMillisInt(options.max_backoff));
  // One connection per robot, even when a process runs many clients (the load tool does).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Notice a silent server (see kKeepaliveTimeMs), also between streams and while no Step runs:
  // by default gRPC sends at most 2 pings until it sends data again.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // 0: no limit
  auto credentials =
      options.credentials != nullptr ? options.credentials : grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateCustomChannel(options.target, credentials, args);
  std::unique_ptr<SessionRecorder> recorder;
  if (!options.record_path.empty()) {
    absl::StatusOr<std::unique_ptr<SessionRecorder>> opened = SessionRecorder::Open(options.record_path);
    if (!opened.ok()) return opened.status();
    recorder = *std::move(opened);
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(channel), std::move(recorder));
  impl->StartThread();
  return std::make_unique<BrainClient>(Passkey(), std::move(impl));
}

absl::Status BrainClient::WaitConnected(absl::Duration timeout) {
  return impl_->WaitConnected(timeout);
}

StepResult BrainClient::Step(std::span<const float> sensors, std::optional<float> reward,
                             absl::Duration deadline) {
  return impl_->Step(sensors, reward, deadline);
}

absl::Status BrainClient::recording_status() const { return impl_->recording_status(); }

bool BrainClient::connected() const { return impl_->connected(); }

std::optional<Welcome> BrainClient::welcome() const { return impl_->welcome(); }

void BrainClient::Close() { impl_->Close(); }

}  // namespace fieldbrain::client
