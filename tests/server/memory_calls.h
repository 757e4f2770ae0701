// Calls of the Memory service over the raw generated stub, for the service and end-to-end tests.
// Every call has a deadline, so a broken server fails a test instead of hanging it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brain/v1/memory.grpc.pb.h"

namespace fieldbrain::server::testing {

class MemoryCalls {
 public:
  explicit MemoryCalls(const std::shared_ptr<grpc::Channel>& channel) : stub_(brain::v1::Memory::NewStub(channel)) {}

  // Any RPC of the stub: MemoryCalls::Call(&Stub::Bind, request, &response).
  template <typename Request, typename Response>
  grpc::Status Call(grpc::Status (brain::v1::Memory::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!bearer_token.empty()) context.AddMetadata("authorization", "Bearer " + bearer_token);
    return (stub_.get()->*method)(&context, request, response);
  }

  std::string bearer_token;  // for a server with a tokens file

  grpc::Status CreateSpace(const std::string& name, uint32_t dim, uint32_t capacity) {
    brain::v1::CreateSpaceRequest r;
    r.set_name(name);
    r.set_dimension(dim);
    r.set_capacity(capacity);
    brain::v1::CreateSpaceResponse out;
    return Call(&brain::v1::Memory::Stub::CreateSpace, r, &out);
  }

  grpc::Status DeleteSpace(const std::string& name) {
    brain::v1::DeleteSpaceRequest r;
    r.set_name(name);
    brain::v1::DeleteSpaceResponse out;
    return Call(&brain::v1::Memory::Stub::DeleteSpace, r, &out);
  }

  brain::v1::ListSpacesResponse List() {
    brain::v1::ListSpacesResponse out;
    Call(&brain::v1::Memory::Stub::ListSpaces, brain::v1::ListSpacesRequest(), &out);
    return out;
  }

  // Vectors first_index.. of the (kind, seed) stream; empty on failure (`status` says why).
  std::vector<uint64_t> PutRandom(const std::string& space, brain::v1::VectorKind kind, uint64_t seed, uint32_t count,
                                  uint64_t first_index = 0, grpc::Status* status = nullptr) {
    brain::v1::PutRequest r;
    r.set_space(space);
    r.mutable_random()->set_kind(kind);
    r.mutable_random()->set_seed(seed);
    r.mutable_random()->set_count(count);
    r.mutable_random()->set_first_index(first_index);
    brain::v1::PutResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Put, r, &out);
    if (status != nullptr) *status = s;
    return std::vector<uint64_t>(out.ids().begin(), out.ids().end());
  }

  std::vector<uint64_t> PutValues(const std::string& space, const std::vector<std::vector<float>>& vectors,
                                  grpc::Status* status = nullptr) {
    brain::v1::PutRequest r;
    r.set_space(space);
    for (const std::vector<float>& v : vectors) {
      brain::v1::Vector* out = r.mutable_values()->add_vectors();
      for (float x : v) out->add_values(x);
    }
    brain::v1::PutResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Put, r, &out);
    if (status != nullptr) *status = s;
    return std::vector<uint64_t>(out.ids().begin(), out.ids().end());
  }

  std::vector<std::vector<float>> Get(const std::string& space, const std::vector<uint64_t>& ids,
                                      grpc::Status* status = nullptr) {
    brain::v1::GetRequest r;
    r.set_space(space);
    for (uint64_t id : ids) r.add_ids(id);
    brain::v1::GetResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Get, r, &out);
    if (status != nullptr) *status = s;
    std::vector<std::vector<float>> vectors;
    for (const brain::v1::Vector& v : out.vectors()) vectors.emplace_back(v.values().begin(), v.values().end());
    return vectors;
  }

  std::vector<uint64_t> Bind(const std::string& space, const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                             grpc::Status* status = nullptr) {
    brain::v1::BindRequest r;
    r.set_space(space);
    for (uint64_t id : a) r.add_a(id);
    for (uint64_t id : b) r.add_b(id);
    brain::v1::BindResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Bind, r, &out);
    if (status != nullptr) *status = s;
    return std::vector<uint64_t>(out.ids().begin(), out.ids().end());
  }

  std::vector<uint64_t> Unbind(const std::string& space, const std::vector<uint64_t>& c,
                               const std::vector<uint64_t>& key, grpc::Status* status = nullptr) {
    brain::v1::UnbindRequest r;
    r.set_space(space);
    for (uint64_t id : c) r.add_c(id);
    for (uint64_t id : key) r.add_key(id);
    brain::v1::UnbindResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Unbind, r, &out);
    if (status != nullptr) *status = s;
    return std::vector<uint64_t>(out.ids().begin(), out.ids().end());
  }

  std::vector<float> Similarity(const std::string& space, const std::vector<uint64_t>& a,
                                const std::vector<uint64_t>& b, grpc::Status* status = nullptr) {
    brain::v1::SimilarityRequest r;
    r.set_space(space);
    for (uint64_t id : a) r.add_a(id);
    for (uint64_t id : b) r.add_b(id);
    brain::v1::SimilarityResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Similarity, r, &out);
    if (status != nullptr) *status = s;
    return std::vector<float>(out.cosines().begin(), out.cosines().end());
  }

  brain::v1::CleanupResponse Cleanup(const std::string& space, const std::vector<uint64_t>& queries, uint32_t k,
                                     const std::vector<uint64_t>& candidates = {}, grpc::Status* status = nullptr) {
    brain::v1::CleanupRequest r;
    r.set_space(space);
    for (uint64_t id : queries) r.add_queries(id);
    r.set_k(k);
    for (uint64_t id : candidates) r.add_candidates(id);
    brain::v1::CleanupResponse out;
    const grpc::Status s = Call(&brain::v1::Memory::Stub::Cleanup, r, &out);
    if (status != nullptr) *status = s;
    return out;
  }

  brain::v1::Memory::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<brain::v1::Memory::Stub> stub_;
};

}  // namespace fieldbrain::server::testing
