#include "server/memory/memory_service.h"

#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/synchronization/notification.h"
#include "server/brain_service.h"
#include "server/log.h"
#include "server/memory/request_checks.h"

namespace fieldbrain::server::memory {
namespace {

constexpr char kShuttingDown[] = "the server is shutting down";

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryService>> MemoryService::Start(const MemoryOptions& options,
                                                                    telemetry::Metrics* metrics) {
  std::unique_ptr<MemoryService> service(new MemoryService(options));
  absl::Status status = absl::UnavailableError("the Memory thread has stopped");
  absl::Notification made;
  service->thread_.Run([&](MemoryJobState state) {
    switch (state) {
      case MemoryJobState::kServing: {
        absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(options, metrics);
        status = store.status();
        if (store.ok()) {
          service->backend_ = (*store)->backend();
          service->shared_bytes_ = (*store)->shared_bytes();
          service->store_ = *std::move(store);
        }
        break;
      }
      case MemoryJobState::kStopped:
        break;
    }
    made.Notify();
  });
  made.WaitForNotification();
  if (!status.ok()) return status;
  LogInfo("Memory service: backend=", service->backend_, " arena_bytes=", options.arena_bytes,
          " max_request_vectors=", options.max_request_vectors, " shared_backend_bytes=",
          service->shared_bytes_);
  return service;
}

MemoryService::MemoryService(const MemoryOptions& options)
    : limits_{options.max_request_vectors}, access_(options.access), on_device_lost_(options.on_device_lost) {}

MemoryService::~MemoryService() { ReleaseStore(); }

void MemoryService::BeginShutdown() { shutting_down_.store(true, std::memory_order_release); }

void MemoryService::ReleaseStore() {
  absl::MutexLock lock(&release_mu_);
  if (released_) return;
  released_ = true;
  BeginShutdown();
  absl::Notification done;
  // Whatever the state: the store goes now, on the Memory thread while it runs (device memory
  // is freed there), or here once it has ended.
  thread_.Run([&](MemoryJobState) {
    store_.reset();
    done.Notify();
  });
  done.WaitForNotification();
  thread_.Stop();
}

absl::Status MemoryService::device_lost() const {
  absl::MutexLock lock(&lost_mu_);
  return lost_status_;
}

void MemoryService::CheckDevice() {
  if (store_ == nullptr || lost_.load(std::memory_order_acquire)) return;
  absl::Status health = store_->device_health();
  if (health.ok()) return;
  {
    absl::MutexLock lock(&lost_mu_);
    lost_status_ = health;
  }
  lost_.store(true, std::memory_order_release);
  LogError("Memory service: ", health.message(), "; answering every request UNAVAILABLE");
  if (on_device_lost_) on_device_lost_(health);
}

// The space a request works in, for the tokens file's spaces=; nullopt for ListSpaces, which
// only needs a valid token.
std::optional<absl::string_view> SpaceNamed(const brain::v1::CreateSpaceRequest& r) { return r.name(); }
std::optional<absl::string_view> SpaceNamed(const brain::v1::DeleteSpaceRequest& r) { return r.name(); }
std::optional<absl::string_view> SpaceNamed(const brain::v1::ListSpacesRequest&) { return std::nullopt; }
template <typename Request>
std::optional<absl::string_view> SpaceNamed(const Request& r) {
  return r.space();
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* MemoryService::Serve(grpc::CallbackServerContext* context, const Request* request,
                                               Response* response,
                                               absl::Status (MemoryStore::*op)(const Request&, Response*)) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (shutting_down_.load(std::memory_order_acquire)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, kShuttingDown));
    return reactor;
  }
  if (lost_.load(std::memory_order_acquire)) {
    reactor->Finish(ToGrpcStatus(device_lost()));
    return reactor;
  }
  if (access_ != nullptr) {
    const std::string authorization = AuthorizationOf(*context);
    const std::optional<absl::string_view> space = SpaceNamed(*request);
    const absl::Status allowed = space.has_value() ? access_->CheckSpace(authorization, *space)
                                                   : access_->CheckToken(authorization);
    if (!allowed.ok()) {
      reactor->Finish(ToGrpcStatus(allowed));
      return reactor;
    }
  }
  if (absl::Status s = Check(*request, limits_); !s.ok()) {
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  thread_.Run([this, context, reactor, request, response, op](MemoryJobState state) {
    absl::Status status = absl::UnavailableError(kShuttingDown);
    switch (state) {
      case MemoryJobState::kServing:
        // A caller that gave up while the request queued costs nothing more.
        if (context->IsCancelled()) {
          status = absl::CancelledError("the call was cancelled before it ran");
        } else if (std::chrono::system_clock::now() > context->deadline()) {
          status = absl::DeadlineExceededError("the call's deadline passed before it ran; nothing was applied");
        } else if (lost_.load(std::memory_order_acquire)) {
          status = device_lost();
        } else if (store_ != nullptr) {
          status = (store_.get()->*op)(*request, response);
          if (!status.ok()) CheckDevice();
        }
        break;
      case MemoryJobState::kStopped:
        break;
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* MemoryService::CreateSpace(grpc::CallbackServerContext* c,
                                                     const brain::v1::CreateSpaceRequest* r,
                                                     brain::v1::CreateSpaceResponse* out) {
  return Serve(c, r, out, &MemoryStore::CreateSpace);
}

grpc::ServerUnaryReactor* MemoryService::DeleteSpace(grpc::CallbackServerContext* c,
                                                     const brain::v1::DeleteSpaceRequest* r,
                                                     brain::v1::DeleteSpaceResponse* out) {
  return Serve(c, r, out, &MemoryStore::DeleteSpace);
}

grpc::ServerUnaryReactor* MemoryService::ListSpaces(grpc::CallbackServerContext* c,
                                                    const brain::v1::ListSpacesRequest* r,
                                                    brain::v1::ListSpacesResponse* out) {
  return Serve(c, r, out, &MemoryStore::ListSpaces);
}

grpc::ServerUnaryReactor* MemoryService::Put(grpc::CallbackServerContext* c, const brain::v1::PutRequest* r,
                                             brain::v1::PutResponse* out) {
  return Serve(c, r, out, &MemoryStore::Put);
}

grpc::ServerUnaryReactor* MemoryService::Get(grpc::CallbackServerContext* c, const brain::v1::GetRequest* r,
                                             brain::v1::GetResponse* out) {
  return Serve(c, r, out, &MemoryStore::Get);
}

grpc::ServerUnaryReactor* MemoryService::Delete(grpc::CallbackServerContext* c, const brain::v1::DeleteRequest* r,
                                                brain::v1::DeleteResponse* out) {
  return Serve(c, r, out, &MemoryStore::Delete);
}

grpc::ServerUnaryReactor* MemoryService::Bind(grpc::CallbackServerContext* c, const brain::v1::BindRequest* r,
                                              brain::v1::BindResponse* out) {
  return Serve(c, r, out, &MemoryStore::Bind);
}

grpc::ServerUnaryReactor* MemoryService::Unbind(grpc::CallbackServerContext* c, const brain::v1::UnbindRequest* r,
                                                brain::v1::UnbindResponse* out) {
  return Serve(c, r, out, &MemoryStore::Unbind);
}

grpc::ServerUnaryReactor* MemoryService::Superpose(grpc::CallbackServerContext* c, const brain::v1::SuperposeRequest* r,
                                                   brain::v1::SuperposeResponse* out) {
  return Serve(c, r, out, &MemoryStore::Superpose);
}

grpc::ServerUnaryReactor* MemoryService::Permute(grpc::CallbackServerContext* c, const brain::v1::PermuteRequest* r,
                                                 brain::v1::PermuteResponse* out) {
  return Serve(c, r, out, &MemoryStore::Permute);
}

grpc::ServerUnaryReactor* MemoryService::Power(grpc::CallbackServerContext* c, const brain::v1::PowerRequest* r,
                                               brain::v1::PowerResponse* out) {
  return Serve(c, r, out, &MemoryStore::Power);
}

grpc::ServerUnaryReactor* MemoryService::Similarity(grpc::CallbackServerContext* c,
                                                    const brain::v1::SimilarityRequest* r,
                                                    brain::v1::SimilarityResponse* out) {
  return Serve(c, r, out, &MemoryStore::Similarity);
}

grpc::ServerUnaryReactor* MemoryService::Cleanup(grpc::CallbackServerContext* c, const brain::v1::CleanupRequest* r,
                                                 brain::v1::CleanupResponse* out) {
  return Serve(c, r, out, &MemoryStore::Cleanup);
}

}  // namespace fieldbrain::server::memory
