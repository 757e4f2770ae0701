#include "client/tools/session_replay.h"

#include <bit>
#include <map>
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "brain/v1/brain.grpc.pb.h"
#include "client/cycle_stream.h"

namespace fieldbrain::sim {
namespace {

using brain::v1::FrameStatus;
using brain::v1::MotorFrame;
using brain::v1::RecordEntry;
using brain::v1::SensorFrame;

// What a recorded answer says about its frame.
enum class Fate {
  kRan,       // the brain ran it (OK)
  kRejected,  // refused as invalid: not run, and a replay must be refused the same way
  kNotRun,    // never reached the brain (timing, shutdown, engine failure): not replayed
};

Fate FateOf(FrameStatus status) {
  switch (status) {
    case brain::v1::OK:
      return Fate::kRan;
    case brain::v1::WRONG_SENSOR_COUNT:
    case brain::v1::NON_FINITE:
    case brain::v1::OUT_OF_RANGE:
      return Fate::kRejected;
    case brain::v1::FRAME_STATUS_UNSPECIFIED:
    case brain::v1::DEADLINE_EXCEEDED:
    case brain::v1::SUPERSEDED:
    case brain::v1::SHUTTING_DOWN:
    case brain::v1::INTERNAL_ERROR:
    case brain::v1::RATE_LIMITED:
    case brain::v1::FrameStatus_INT_MIN_SENTINEL_DO_NOT_USE_:
    case brain::v1::FrameStatus_INT_MAX_SENTINEL_DO_NOT_USE_:
      return Fate::kNotRun;
  }
  return Fate::kNotRun;  // a status from a newer server: it did not say the brain ran it
}

// Frames without an answer since the last known cycle, to be decided by the next known cycle.
struct Pending {
  std::vector<SensorFrame> frames;
  uint64_t last_cycle = 0;
};

// `known` is the brain's cycle count after `ran_now` more frames (1 for an OK answer, 0 for a
// resumed Welcome) beyond the pending ones that ran.
absl::Status SettlePending(Pending& pending, uint64_t known, uint64_t ran_now, ReplayBrain& brain,
                           ReplayPlan& plan) {
  const int64_t ran = int64_t(known) - int64_t(pending.last_cycle) - int64_t(ran_now);
  const int64_t waiting = int64_t(pending.frames.size());
  if (ran < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot replay: the brain went back from cycle ", pending.last_cycle, " to ", known - ran_now,
        " (resumed from an older checkpoint), which a fresh brain cannot repeat"));
  }
  if (ran == waiting) {
    for (SensorFrame& f : pending.frames) brain.frames.push_back({std::move(f), std::nullopt});
  } else if (ran == 0) {
    plan.frames_skipped += waiting;
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot replay: between cycles ", pending.last_cycle, " and ", known, " the brain ran ", ran,
        " of ", waiting, " frames whose answers were not recorded, and the recording cannot say which"));
  }
  pending.frames.clear();
  pending.last_cycle = known;
  return absl::OkStatus();
}

std::string FloatText(float v) { return absl::StrFormat("%.9g (%a)", v, v); }

bool SameBits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// Empty when `replayed` is `recorded`, bit for bit; else the first field that differs.
std::string Difference(const MotorFrame& recorded, const MotorFrame& replayed) {
  if (recorded.status() != replayed.status()) {
    return absl::StrCat("status: recorded ", brain::v1::FrameStatus_Name(recorded.status()), ", replayed ",
                        brain::v1::FrameStatus_Name(replayed.status()), " ", replayed.detail());
  }
  if (recorded.status() != brain::v1::OK) return "";
  if (recorded.cycle() != replayed.cycle()) {
    return absl::StrCat("cycle: recorded ", recorded.cycle(), ", replayed ", replayed.cycle());
  }
  if (recorded.values_size() != replayed.values_size()) {
    return absl::StrCat("motor count: recorded ", recorded.values_size(), ", replayed ", replayed.values_size());
  }
  for (int k = 0; k < recorded.values_size(); ++k) {
    if (!SameBits(recorded.values(k), replayed.values(k))) {
      return absl::StrCat("motor ", k, ": recorded ", FloatText(recorded.values(k)), ", replayed ",
                          FloatText(replayed.values(k)));
    }
  }
  if (!SameBits(recorded.confidence(), replayed.confidence())) {
    return absl::StrCat("confidence: recorded ", FloatText(recorded.confidence()), ", replayed ",
                        FloatText(replayed.confidence()));
  }
  if (!SameBits(recorded.prediction_error(), replayed.prediction_error())) {
    return absl::StrCat("prediction_error: recorded ", FloatText(recorded.prediction_error()), ", replayed ",
                        FloatText(replayed.prediction_error()));
  }
  return "";
}

std::string ShapeText(const brain::v1::Welcome& w) {
  return absl::StrCat(w.engine(), ", field ", w.field().channels(), "x", w.field().x(), "x", w.field().y(),
                      "x", w.field().z());
}

}  // namespace

absl::StatusOr<ReplayPlan> PlanReplay(const std::vector<RecordEntry>& entries) {
  std::map<uint64_t, MotorFrame> answers;  // the first answer to each seq
  for (const RecordEntry& e : entries) {
    if (e.has_motors()) answers.emplace(e.motors().seq(), e.motors());
  }
  ReplayPlan plan;
  std::optional<brain::v1::Hello> hello;
  Pending pending;
  for (const RecordEntry& e : entries) {
    switch (e.entry_case()) {
      case RecordEntry::kHello:
        hello = e.hello();
        break;
      case RecordEntry::kWelcome: {
        if (!hello.has_value()) return absl::FailedPreconditionError("cannot replay: a Welcome before any Hello");
        if (e.welcome().resumed()) {
          if (plan.brains.empty()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "cannot replay: the recording starts with a brain resumed at cycle ", e.welcome().cycle(),
                "; a replay needs a recording that starts with a new brain"));
          }
          if (absl::Status s = SettlePending(pending, e.welcome().cycle(), 0, plan.brains.back(), plan); !s.ok()) {
            return s;
          }
        } else {
          plan.frames_skipped += int64_t(pending.frames.size());  // the old brain's last frames
          pending = Pending{{}, e.welcome().cycle()};
          plan.brains.push_back(ReplayBrain{*hello, e.welcome(), {}});
        }
        break;
      }
      case RecordEntry::kSensors: {
        ++plan.frames_recorded;
        if (plan.brains.empty()) return absl::FailedPreconditionError("cannot replay: a SensorFrame before any Welcome");
        const auto answer = answers.find(e.sensors().seq());
        if (answer == answers.end()) {
          pending.frames.push_back(e.sensors());
          break;
        }
        switch (FateOf(answer->second.status())) {
          case Fate::kRan:
            if (absl::Status s = SettlePending(pending, answer->second.cycle(), 1, plan.brains.back(), plan);
                !s.ok()) {
              return s;
            }
            plan.brains.back().frames.push_back({e.sensors(), answer->second});
            break;
          case Fate::kRejected:
            // Ahead of any pending frames: harmless, a rejected frame leaves the brain as it was.
            plan.brains.back().frames.push_back({e.sensors(), answer->second});
            break;
          case Fate::kNotRun:
            ++plan.frames_skipped;
            break;
        }
        break;
      }
      case RecordEntry::kMotors:
      case RecordEntry::ENTRY_NOT_SET:
        break;
    }
  }
  plan.frames_skipped += int64_t(pending.frames.size());  // after the last answer: nothing to hold them to
  if (plan.brains.empty()) return absl::FailedPreconditionError("cannot replay: the recording has no Welcome");
  return plan;
}

absl::StatusOr<ReplayReport> ReplaySession(const ReplayPlan& plan, const ReplayOptions& options) {
  ReplayReport report;
  auto credentials = options.credentials != nullptr ? options.credentials : grpc::InsecureChannelCredentials();
  auto stub = brain::v1::Brain::NewStub(grpc::CreateChannel(options.target, credentials));
  const absl::Time end = absl::Now() + options.timeout;
  int64_t index = 0;  // over every frame sent
  for (const ReplayBrain& brain : plan.brains) {
    std::string robot_id = options.robot_id.empty() ? absl::StrCat("replay-", brain.hello.profile().robot_id())
                                                    : options.robot_id;
    robot_id.resize(std::min<size_t>(robot_id.size(), 128));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(end));
    if (!options.bearer_token.empty()) context.AddMetadata("authorization", "Bearer " + options.bearer_token);
    if (client::IsPrintableAscii(robot_id)) context.AddMetadata("x-robot-id", robot_id);  // for a routing proxy
    auto stream = stub->Cycle(&context);
    brain::v1::CycleRequest request;
    brain::v1::Hello* hello = request.mutable_hello();
    *hello = brain.hello;
    hello->mutable_profile()->set_robot_id(robot_id);
    hello->set_seed(brain.welcome.seed());
    hello->set_fresh(true);
    hello->clear_resume_token();
    brain::v1::CycleResponse response;
    if (!stream->Write(request) || !stream->Read(&response) || !response.has_welcome()) {
      const grpc::Status s = stream->Finish();
      return absl::UnavailableError(absl::StrCat("replay stream to ", options.target, " refused: ",
                                                 s.ok() ? "no Welcome" : s.error_message(), " (code ",
                                                 int(s.error_code()), ")"));
    }
    if (ShapeText(response.welcome()) != ShapeText(brain.welcome)) {
      report.notes.push_back(absl::StrCat("recorded on ", ShapeText(brain.welcome), "; replayed on ",
                                          ShapeText(response.welcome()), ": answers will differ"));
    }
    for (const ReplayFrame& frame : brain.frames) {
      request.Clear();
      *request.mutable_sensors() = frame.sensors;
      request.mutable_sensors()->set_deadline_us(0);  // lockstep: a slow server is not a difference
      for (;;) {
        if (!stream->Write(request) || !stream->Read(&response) || !response.has_motors()) {
          const grpc::Status s = stream->Finish();
          return absl::UnavailableError(absl::StrCat("replay stream ended after ", report.frames_sent,
                                                     " frames: ", s.error_message()));
        }
        // Faster than the server's rate limit: the brain did not run it, so send it again.
        if (response.motors().status() != brain::v1::RATE_LIMITED) break;
        ++report.rate_limited;
        absl::SleepFor(absl::Milliseconds(5));
      }
      ++report.frames_sent;
      if (frame.recorded.has_value()) {
        ++report.frames_compared;
        if (std::string d = Difference(*frame.recorded, response.motors()); !d.empty()) {
          report.first_difference = absl::StrCat("frame ", index, " (seq ", frame.sensors.seq(), ", recorded cycle ",
                                                 frame.recorded->cycle(), "): ", d);
          context.TryCancel();
          return report;
        }
      }
      ++index;
    }
    stream->WritesDone();
    if (const grpc::Status s = stream->Finish(); !s.ok()) {
      return absl::UnavailableError(absl::StrCat("replay stream ended with ", s.error_message()));
    }
  }
  return report;
}

}  // namespace fieldbrain::sim
