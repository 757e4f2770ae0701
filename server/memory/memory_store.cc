#include "server/memory/memory_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/hrr/hrr_space.h"
#include "server/log.h"

namespace fieldbrain::server::memory {
namespace {

using telemetry::HrrOp;

// The backend the spaces use and its shared context: the engine's, unless it cannot make a space
// here (a build without the CUDA HRR backend): then the CPU one, said once in the log. The context
// is sized for the largest space the limits allow (MemorySpace::Create's max_batch is the request
// limit whatever the dimension), so that making and deleting spaces later allocates nothing shared
// (on CUDA: the pinned staging block, whose cudaHostAlloc would synchronise the device).
std::shared_ptr<hrr::BackendContext> ChooseBackend(const MemoryOptions& options) {
  if (options.engine_kind == "cuda") {
    absl::StatusOr<std::shared_ptr<hrr::BackendContext>> context = hrr::AcquireBackendContext("cuda");
    absl::Status status = context.status();
    const int batch = std::max(1, options.max_request_vectors);
    if (status.ok()) status = (*context)->Reserve(hrr::HrrConfig{kMaxSpaceDimension, batch, batch});
    if (status.ok()) status = hrr::MakeHrrSpace("cuda", hrr::HrrConfig{2, 1, 1}).status();  // the kernels load
    if (status.ok()) return *std::move(context);
    LogWarning("Memory service: HRR spaces run on the CPU although the engine is CUDA (", status.ToString(), ")");
  }
  return *hrr::AcquireBackendContext("cpu");
}

int64_t Terms(const brain::v1::SuperposeRequest& r) {
  int64_t n = 0;
  for (const brain::v1::SuperposeGroup& g : r.groups()) n += g.ids_size();
  return n;
}

void Describe(const MemorySpace& space, brain::v1::SpaceInfo* info) {
  info->set_name(space.name());
  info->set_dimension(uint32_t(space.dim()));
  info->set_capacity(uint32_t(space.capacity()));
  info->set_vectors(uint32_t(space.size()));
  info->set_bytes(uint64_t(space.bytes()));
}

}  // namespace

brain::v1::MemoryLimits MakeMemoryLimits(const RequestLimits& limits, const MemoryArena& arena,
                                         const std::string& backend) {
  brain::v1::MemoryLimits l;
  l.set_max_dimension(kMaxSpaceDimension);
  l.set_max_capacity(kMaxSpaceCapacity);
  l.set_max_request_vectors(uint32_t(limits.max_request_vectors));
  l.set_max_cleanup_comparisons(uint64_t(limits.max_cleanup_comparisons()));
  l.set_max_cleanup_k(kMaxCleanupK);
  l.set_max_get_values(kMaxGetValues);
  l.set_arena_bytes(uint64_t(arena.bytes()));
  l.set_arena_used_bytes(uint64_t(arena.used()));
  l.set_backend(backend);
  return l;
}

absl::StatusOr<std::unique_ptr<MemoryStore>> MemoryStore::Create(const MemoryOptions& options,
                                                                 telemetry::Metrics* metrics) {
  std::shared_ptr<hrr::BackendContext> context = ChooseBackend(options);
  std::string backend(context->backend());
  absl::StatusOr<std::unique_ptr<MemoryArena>> arena = MemoryArena::Create(options.arena_bytes, backend == "cpu");
  if (!arena.ok()) return arena.status();
  absl::StatusOr<MemoryArena::Lease> shared = (*arena)->TakeBudget(context->bytes());
  if (!shared.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("the ", backend, " HRR backend's shared context (",
                                                     context->bytes(), " bytes: the cuBLAS work area and the pinned staging block) does not fit ",
                                                     "the Memory arena: raise --memory_arena_bytes"));
  }
  absl::StatusOr<std::unique_ptr<VectorDigester>> digester = VectorDigester::Create();
  if (!digester.ok()) return digester.status();
  std::unique_ptr<MemoryStore> store(new MemoryStore(options, *std::move(arena), std::move(backend),
                                                     std::move(context), *std::move(shared), metrics));
  store->scratch_.digest.digester = *std::move(digester);
  store->PublishGauges();
  return store;
}

MemoryStore::MemoryStore(const MemoryOptions& options, std::unique_ptr<MemoryArena> arena, std::string backend,
                         std::shared_ptr<hrr::BackendContext> context, MemoryArena::Lease shared_lease,
                         telemetry::Metrics* metrics)
    : limits_{options.max_request_vectors},
      metrics_(metrics),
      arena_(std::move(arena)),
      context_(std::move(context)),
      shared_lease_(std::move(shared_lease)),
      registry_(std::make_unique<SpaceRegistry>(*arena_, std::move(backend), options.max_request_vectors)) {}

void MemoryStore::PublishGauges() {
  if (metrics_ == nullptr) return;
  metrics_->SetHrrVectorsStored(registry_->vectors_stored());
  metrics_->SetHrrArena(arena_->bytes(), arena_->used());
}

template <typename Request, typename Response, typename Op>
absl::Status MemoryStore::OnSpace(const Request& r, Response* out, HrrOp metric, int64_t vectors, int64_t work, Op op) {
  absl::StatusOr<MemorySpace*> space = registry_->Find(r.space());
  if (!space.ok()) return space.status();
  if (const int dim = (*space)->dim(); work > limits_.vectors_at(dim)) {
    return absl::InvalidArgumentError(absl::StrCat("this request names ", work, " vectors; at dimension ", dim,
                                                   " a request takes at most ", limits_.vectors_at(dim),
                                                   " (--memory_max_request_vectors counts vectors of dimension ",
                                                   kLimitDimension, "): split it"));
  }
  absl::Status status = op(**space, r, out);
  if (!status.ok()) {
    out->Clear();  // nothing of a failed request is answered
    return status;
  }
  if (metrics_ != nullptr) metrics_->RecordHrrOperations(metric, vectors);
  return absl::OkStatus();
}

absl::Status MemoryStore::CreateSpace(const brain::v1::CreateSpaceRequest& r, brain::v1::CreateSpaceResponse* out) {
  absl::StatusOr<MemorySpace*> space = registry_->Create(r.name(), int(r.dimension()), int(r.capacity()));
  if (!space.ok()) return space.status();
  Describe(**space, out->mutable_space());
  PublishGauges();
  return absl::OkStatus();
}

absl::Status MemoryStore::DeleteSpace(const brain::v1::DeleteSpaceRequest& r, brain::v1::DeleteSpaceResponse*) {
  if (absl::Status s = registry_->Delete(r.name()); !s.ok()) return s;
  PublishGauges();
  return absl::OkStatus();
}

absl::Status MemoryStore::ListSpaces(const brain::v1::ListSpacesRequest&, brain::v1::ListSpacesResponse* out) {
  registry_->ForEach([&](const MemorySpace& space) { Describe(space, out->add_spaces()); });
  *out->mutable_limits() = MakeMemoryLimits(limits_, *arena_, registry_->backend());
  return absl::OkStatus();
}

absl::Status MemoryStore::Put(const brain::v1::PutRequest& r, brain::v1::PutResponse* out) {
  const int64_t n = r.has_random() ? int64_t(r.random().count()) : int64_t(r.values().vectors_size());
  absl::Status s = OnSpace(r, out, HrrOp::kPut, n, n, [&](MemorySpace& space, const auto& req, auto* resp) {
    return RunPut(space, req, resp, scratch_);
  });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Get(const brain::v1::GetRequest& r, brain::v1::GetResponse* out) {
  return OnSpace(r, out, HrrOp::kGet, r.ids_size(), r.ids_size(),
                 [&](MemorySpace& space, const auto& req, auto* resp) { return RunGet(space, req, resp, scratch_); });
}

absl::Status MemoryStore::Delete(const brain::v1::DeleteRequest& r, brain::v1::DeleteResponse* out) {
  absl::Status s =
      OnSpace(r, out, HrrOp::kDelete, r.ids_size(), r.ids_size(),
              [&](MemorySpace& space, const auto& req, auto* resp) { return RunDelete(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Bind(const brain::v1::BindRequest& r, brain::v1::BindResponse* out) {
  absl::Status s =
      OnSpace(r, out, HrrOp::kBind, r.a_size(), r.a_size(),
              [&](MemorySpace& space, const auto& req, auto* resp) { return RunBind(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Unbind(const brain::v1::UnbindRequest& r, brain::v1::UnbindResponse* out) {
  absl::Status s =
      OnSpace(r, out, HrrOp::kUnbind, r.c_size(), r.c_size(),
              [&](MemorySpace& space, const auto& req, auto* resp) { return RunUnbind(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Superpose(const brain::v1::SuperposeRequest& r, brain::v1::SuperposeResponse* out) {
  absl::Status s = OnSpace(
      r, out, HrrOp::kSuperpose, r.groups_size(), Terms(r),
      [&](MemorySpace& space, const auto& req, auto* resp) { return RunSuperpose(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Permute(const brain::v1::PermuteRequest& r, brain::v1::PermuteResponse* out) {
  absl::Status s =
      OnSpace(r, out, HrrOp::kPermute, r.ids_size(), r.ids_size(),
              [&](MemorySpace& space, const auto& req, auto* resp) { return RunPermute(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Power(const brain::v1::PowerRequest& r, brain::v1::PowerResponse* out) {
  absl::Status s =
      OnSpace(r, out, HrrOp::kPower, r.ids_size(), r.ids_size(),
              [&](MemorySpace& space, const auto& req, auto* resp) { return RunPower(space, req, resp, scratch_); });
  PublishGauges();
  return s;
}

absl::Status MemoryStore::Similarity(const brain::v1::SimilarityRequest& r, brain::v1::SimilarityResponse* out) {
  return OnSpace(
      r, out, HrrOp::kSimilarity, r.a_size(), r.a_size(),
      [&](MemorySpace& space, const auto& req, auto* resp) { return RunSimilarity(space, req, resp, scratch_); });
}

absl::Status MemoryStore::Cleanup(const brain::v1::CleanupRequest& r, brain::v1::CleanupResponse* out) {
  return OnSpace(
      r, out, HrrOp::kCleanup, r.queries_size(), r.queries_size(),
      [&](MemorySpace& space, const auto& req, auto* resp) { return RunCleanup(space, req, resp, scratch_, limits_); });
}

}  // namespace fieldbrain::server::memory
