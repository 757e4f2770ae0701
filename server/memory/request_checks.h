// The Memory service's checks of a request by itself, run on the gRPC thread before the request
// is handed to the Memory thread: names, list lengths, limits, finite values (Put's also within
// +-hrr::kMaxValue). What depends on the spaces (unknown names and ids, dimensions, room) is
// checked on the Memory thread. Each returns INVALID_ARGUMENT naming the offending field and
// element, or OK.
#pragma once

#include "absl/status/status.h"
#include "brain/v1/memory.pb.h"
#include "server/memory/memory_limits.h"

namespace fieldbrain::server::memory {

absl::Status Check(const brain::v1::CreateSpaceRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::DeleteSpaceRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::ListSpacesRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::PutRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::GetRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::DeleteRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::BindRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::UnbindRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::SuperposeRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::PermuteRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::PowerRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::SimilarityRequest& request, const RequestLimits& limits);
absl::Status Check(const brain::v1::CleanupRequest& request, const RequestLimits& limits);

}  // namespace fieldbrain::server::memory
