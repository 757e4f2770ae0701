#include "server/brain_service.h"

#include "absl/strings/str_cat.h"
#include "server/cycle_stream.h"

namespace fieldbrain::server {
namespace {

// Hellos admitted at once: each may read a checkpoint or wait (up to 2 s) for a released brain to
// reach disk; Hellos are rare next to frames.
constexpr int kAdmissionThreads = 4;

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

BrainService::BrainService(ServiceDeps deps)
    : deps_(std::move(deps)),
      // Buckets for a few times the robots served at once (robots come and go), past which full
      // ones are dropped.
      rate_limits_(deps_.max_frame_hz, deps_.frame_burst, 4 * int(deps_.limits.max_robots()) + 16),
      admission_(kAdmissionThreads) {}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* BrainService::Cycle(
    grpc::CallbackServerContext* context) {
  // The reactor owns itself: gRPC holds it until OnDone, in-flight frames until answered.
  return new CycleStream(this, next_stream_id_.fetch_add(1, std::memory_order_relaxed), AuthorizationOf(*context),
                         RobotIdHeaderOf(*context));
}

grpc::ServerUnaryReactor* BrainService::GetServerInfo(grpc::CallbackServerContext* context,
                                                      const brain::v1::GetServerInfoRequest*,
                                                      brain::v1::ServerInfo* info) {
  const EngineFacts& facts = deps_.scheduler->facts();
  info->set_version(deps_.version);
  info->set_engine(facts.kind);
  info->set_device(facts.device);
  FillFieldShape(info->mutable_field());
  *info->mutable_limits() = deps_.limits;
  info->set_sessions_active(static_cast<uint32_t>(deps_.directory->live()));
  info->set_cycles_total(deps_.scheduler->cycles_total());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void BrainService::BeginShutdown() {
  if (shutting_down_.exchange(true, std::memory_order_acq_rel)) return;
  registry_.ForEachLive([](CycleStream& stream) { stream.BeginShutdown(); });
}

void BrainService::EngineFailed(const absl::Status& failure) {
  grpc::Status status;
  {
    absl::MutexLock lock(&failure_mu_);
    if (engine_failure_.has_value()) return;
    engine_failure_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   absl::StrCat("the brain engine failed (", failure.message(),
                                                "); reconnect to another server"));
    status = *engine_failure_;
  }
  registry_.ForEachLive([&status](CycleStream& stream) { stream.EndWith(status); });
}

void BrainService::RecheckAccess() {
  registry_.ForEachLive([](CycleStream& stream) { stream.RecheckAccess(); });
}

std::optional<grpc::Status> BrainService::engine_failure() const {
  absl::MutexLock lock(&failure_mu_);
  return engine_failure_;
}

void BrainService::FillFieldShape(brain::v1::FieldShape* field) const {
  const FieldShape& shape = deps_.scheduler->facts().shape;
  field->set_channels(static_cast<uint32_t>(shape.channels));
  field->set_x(static_cast<uint32_t>(shape.nx));
  field->set_y(static_cast<uint32_t>(shape.ny));
  field->set_z(static_cast<uint32_t>(shape.nz));
}

}  // namespace fieldbrain::server
