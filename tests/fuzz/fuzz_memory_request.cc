// Arbitrary bytes as one of the Memory service's requests (the first byte picks which), through
// the checks the service runs on the gRPC thread before anything touches the store.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "brain/v1/memory.pb.h"
#include "server/memory/request_checks.h"

namespace {

template <typename Request>
void Check(const uint8_t* data, size_t size) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  for (int vectors : {1, 256, 65536}) (void)fieldbrain::server::memory::Check(request, {vectors});
}

}  // namespace

// Invalid UTF-8 in a string field is an expected parse failure, not news: keep the log quiet.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 13;
  ++data;
  --size;
  using namespace brain::v1;
  switch (which) {
    case 0: Check<CreateSpaceRequest>(data, size); break;
    case 1: Check<DeleteSpaceRequest>(data, size); break;
    case 2: Check<ListSpacesRequest>(data, size); break;
    case 3: Check<PutRequest>(data, size); break;
    case 4: Check<GetRequest>(data, size); break;
    case 5: Check<DeleteRequest>(data, size); break;
    case 6: Check<BindRequest>(data, size); break;
    case 7: Check<UnbindRequest>(data, size); break;
    case 8: Check<SuperposeRequest>(data, size); break;
    case 9: Check<PermuteRequest>(data, size); break;
    case 10: Check<PowerRequest>(data, size); break;
    case 11: Check<SimilarityRequest>(data, size); break;
    case 12: Check<CleanupRequest>(data, size); break;
  }
  return 0;
}
