// The Memory service in-process over a loopback port, driven with the raw generated stub: each
// operation against the HRR library run directly, the known HRR numbers, every refusal (and that
// a refused call changes nothing), the metrics, and robots' cycles while the service is flooded.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpu/hrr/hrr_space.h"
#include "gtest/gtest.h"
#include "memory_calls.h"
#include "raw_stream.h"
#include "server/brain_server.h"
#include "test_server_config.h"

namespace fieldbrain::server {
namespace {

using brain::v1::Memory;
using brain::v1::VECTOR_KIND_GAUSSIAN;
using brain::v1::VECTOR_KIND_UNITARY;
using ::testing::HasSubstr;
using testing::MemoryCalls;

constexpr int kMaxRequestVectors = 256;

ServerConfig MemoryConfig() {
  ServerConfig c = testing::TestServerConfig();
  c.memory_arena_bytes = 16 << 20;
  c.memory_max_request_vectors = kMaxRequestVectors;
  return c;
}

class MemoryServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(MemoryConfig()); }

  void StartServer(const ServerConfig& config) {
    absl::StatusOr<std::unique_ptr<BrainServer>> s = BrainServer::Start(config, "test");
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1);
    args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, -1);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                         grpc::InsecureChannelCredentials(), args);
    calls_ = std::make_unique<MemoryCalls>(channel_);
  }

  // The space's vector count as ListSpaces reports it (-1 when there is no such space).
  int64_t Stored(const std::string& space) {
    const brain::v1::ListSpacesResponse list = calls_->List();
    for (const brain::v1::SpaceInfo& info : list.spaces())
      if (info.name() == space) return info.vectors();
    return -1;
  }

  std::unique_ptr<BrainServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<MemoryCalls> calls_;
};

void ExpectCode(const grpc::Status& s, grpc::StatusCode code, const std::string& words) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(words));
}

TEST_F(MemoryServiceTest, WithATokensFileSpacesAreCheckedByName) {
  const std::string tokens = ::testing::TempDir() + "/memory_tokens." + std::to_string(::getpid());
  std::ofstream(tokens) << "lab-token-0123456789abc spaces=lab.*\n";
  server_.reset();
  ServerConfig config = MemoryConfig();
  config.tokens_file = tokens;
  StartServer(config);
  ExpectCode(calls_->CreateSpace("lab.places", 512, 16), grpc::StatusCode::UNAUTHENTICATED, "bearer token");
  calls_->bearer_token = "lab-token-0123456789abc";
  ASSERT_TRUE(calls_->CreateSpace("lab.places", 512, 16).ok());
  ExpectCode(calls_->CreateSpace("shop.items", 512, 16), grpc::StatusCode::PERMISSION_DENIED,
             "may not use Memory space \"shop.items\"");
  EXPECT_EQ(Stored("lab.places"), 0);  // ListSpaces with a valid token
  calls_->bearer_token = "not-the-lab-token-0000";
  brain::v1::ListSpacesResponse list;
  ExpectCode(calls_->Call(&brain::v1::Memory::Stub::ListSpaces, brain::v1::ListSpacesRequest(), &list),
             grpc::StatusCode::UNAUTHENTICATED, "not valid");
  std::remove(tokens.c_str());
}

TEST_F(MemoryServiceTest, SpacesAreCreatedListedAndDeleted) {
  ASSERT_TRUE(calls_->CreateSpace("beta", 512, 16).ok());
  ASSERT_TRUE(calls_->CreateSpace("alpha", 1024, 32).ok());
  ExpectCode(calls_->CreateSpace("alpha", 256, 8), grpc::StatusCode::ALREADY_EXISTS, "'alpha' exists already");
  const brain::v1::ListSpacesResponse list = calls_->List();
  ASSERT_EQ(list.spaces_size(), 2);
  EXPECT_EQ(list.spaces(0).name(), "alpha");  // by name
  EXPECT_EQ(list.spaces(0).dimension(), 1024u);
  EXPECT_EQ(list.spaces(0).capacity(), 32u);
  EXPECT_EQ(list.spaces(0).vectors(), 0u);
  EXPECT_GT(list.spaces(0).bytes(), 32u * 513u * 8u);
  EXPECT_EQ(list.limits().backend(), "cpu");
  EXPECT_EQ(list.limits().arena_bytes(), 16u << 20);
  EXPECT_EQ(list.limits().arena_used_bytes(), list.spaces(0).bytes() + list.spaces(1).bytes());
  EXPECT_EQ(list.limits().max_request_vectors(), uint32_t(kMaxRequestVectors));
  EXPECT_EQ(list.limits().max_cleanup_comparisons(), uint64_t(kMaxRequestVectors) * 16u);
  EXPECT_EQ(list.limits().max_cleanup_k(), 32u);
  EXPECT_EQ(list.limits().max_get_values(), 1u << 19);

  ASSERT_TRUE(calls_->DeleteSpace("alpha").ok());
  ExpectCode(calls_->DeleteSpace("alpha"), grpc::StatusCode::NOT_FOUND, "no space named 'alpha'");
  EXPECT_EQ(calls_->List().spaces_size(), 1);
  ASSERT_TRUE(calls_->DeleteSpace("beta").ok());
  EXPECT_EQ(calls_->List().limits().arena_used_bytes(), 0u);

  ExpectCode(calls_->CreateSpace("", 64, 4), grpc::StatusCode::INVALID_ARGUMENT, "1-64 bytes");
  ExpectCode(calls_->CreateSpace(std::string(65, 'x'), 64, 4), grpc::StatusCode::INVALID_ARGUMENT, "1-64 bytes");
  ExpectCode(calls_->CreateSpace("no spaces", 64, 4), grpc::StatusCode::INVALID_ARGUMENT, "[A-Za-z0-9._-]");
  ExpectCode(calls_->CreateSpace("odd", 63, 4), grpc::StatusCode::INVALID_ARGUMENT, "dimension 63 must be even");
  ExpectCode(calls_->CreateSpace("huge", 32768, 4), grpc::StatusCode::INVALID_ARGUMENT, "dimension 32768");
  ExpectCode(calls_->CreateSpace("empty", 64, 0), grpc::StatusCode::INVALID_ARGUMENT, "capacity 0");
}

TEST_F(MemoryServiceTest, PutValuesRoundTripAndGetAnswersInTheOrderAsked) {
  ASSERT_TRUE(calls_->CreateSpace("s", 8, 4).ok());
  const std::vector<std::vector<float>> v = {
      {1, 0, 0, 0, 0, 0, 0, 0}, {0.5f, -0.25f, 2, 3, -4, 0.125f, 7, -1}, {-1, -1, -1, -1, 1, 1, 1, 1}};
  grpc::Status s;
  const std::vector<uint64_t> ids = calls_->PutValues("s", v, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3}));  // the server chooses ids: 1, 2, 3...
  const std::vector<std::vector<float>> got = calls_->Get("s", {3, 1, 3, 2}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(got.size(), 4u);
  const size_t order[] = {2, 0, 2, 1};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(got[i].size(), 8u);
    for (size_t j = 0; j < 8; ++j) EXPECT_NEAR(got[i][j], v[order[i]][j], 1e-5f) << i << "," << j;
  }
}

// Each operation through the service gives what the library gives when called directly on the
// same vectors (the same backend, so to float rounding).
TEST_F(MemoryServiceTest, EveryOperationMatchesTheLibrary) {
  constexpr int kDim = 256;
  ASSERT_TRUE(calls_->CreateSpace("s", kDim, 64).ok());
  absl::StatusOr<std::unique_ptr<hrr::HrrSpace>> lib = hrr::MakeHrrSpace("cpu", hrr::HrrConfig{kDim, 64, 64});
  ASSERT_TRUE(lib.ok());
  hrr::HrrSpace& h = **lib;
  auto range = [](int begin, int n) {
    std::vector<int32_t> r(static_cast<size_t>(n));
    std::iota(r.begin(), r.end(), begin);
    return r;
  };
  auto lib_vectors = [&](const std::vector<int32_t>& slots) {
    std::vector<float> flat(slots.size() * kDim);
    EXPECT_TRUE(h.Get(slots, flat).ok());
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < slots.size(); ++i)
      out.emplace_back(flat.begin() + long(i * kDim), flat.begin() + long((i + 1) * kDim));
    return out;
  };
  auto expect_same = [&](const std::string& what, const std::vector<uint64_t>& ids, const std::vector<int32_t>& slots) {
    grpc::Status s;
    const std::vector<std::vector<float>> served = calls_->Get("s", ids, &s);
    ASSERT_TRUE(s.ok()) << what << ": " << s.error_message();
    const std::vector<std::vector<float>> direct = lib_vectors(slots);
    ASSERT_EQ(served.size(), direct.size()) << what;
    for (size_t i = 0; i < served.size(); ++i)
      for (size_t j = 0; j < size_t(kDim); ++j)
        ASSERT_NEAR(served[i][j], direct[i][j], 1e-6f) << what << " " << i << "," << j;
  };

  // Put from a seed: vectors 10..13 of Gaussian seed 1 and 0..3 of unitary seed 2.
  const std::vector<uint64_t> a = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 4, 10);
  const std::vector<uint64_t> u = calls_->PutRandom("s", VECTOR_KIND_UNITARY, 2, 4, 0);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(u.size(), 4u);
  ASSERT_TRUE(h.Random(range(0, 4), hrr::VectorKind::kGaussian, 1, std::vector<uint64_t>{10, 11, 12, 13}).ok());
  ASSERT_TRUE(h.Random(range(4, 4), hrr::VectorKind::kUnitary, 2, std::vector<uint64_t>{0, 1, 2, 3}).ok());
  expect_same("put", {a[0], a[1], a[2], a[3], u[0], u[1], u[2], u[3]}, range(0, 8));

  const std::vector<uint64_t> bound = calls_->Bind("s", a, u);
  ASSERT_TRUE(h.Bind(range(8, 4), range(0, 4), range(4, 4)).ok());
  expect_same("bind", bound, range(8, 4));

  const std::vector<uint64_t> unbound = calls_->Unbind("s", bound, {u[1], u[0], u[3], u[2]});
  ASSERT_TRUE(h.Unbind(range(12, 4), range(8, 4), std::vector<int32_t>{5, 4, 7, 6}).ok());
  expect_same("unbind", unbound, range(12, 4));

  brain::v1::SuperposeRequest sup;
  sup.set_space("s");
  sup.set_normalize(true);
  brain::v1::SuperposeGroup* g0 = sup.add_groups();
  for (uint64_t id : {a[0], a[1], u[2]}) g0->add_ids(id);
  for (float w : {0.5f, -2.0f, 1.5f}) g0->add_weights(w);
  brain::v1::SuperposeGroup* g1 = sup.add_groups();
  for (uint64_t id : {a[2], u[3]}) g1->add_ids(id);
  brain::v1::SuperposeResponse sup_out;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Superpose, sup, &sup_out).ok());
  ASSERT_TRUE(h.Superpose(range(16, 2), std::vector<int32_t>{0, 3, 5}, std::vector<int32_t>{0, 1, 6, 2, 7},
                          std::vector<float>{0.5f, -2.0f, 1.5f, 1.0f, 1.0f}, true)
                  .ok());
  expect_same("superpose", {sup_out.ids().begin(), sup_out.ids().end()}, range(16, 2));

  brain::v1::PermuteRequest perm;
  perm.set_space("s");
  for (uint64_t id : {a[0], a[1], u[0]}) perm.add_ids(id);
  for (int32_t shift : {3, -5, 1000}) perm.add_shifts(shift);
  brain::v1::PermuteResponse perm_out;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Permute, perm, &perm_out).ok());
  ASSERT_TRUE(h.Permute(range(18, 3), std::vector<int32_t>{0, 1, 4}, std::vector<int32_t>{3, -5, 1000}).ok());
  expect_same("permute", {perm_out.ids().begin(), perm_out.ids().end()}, range(18, 3));

  brain::v1::PowerRequest pow;
  pow.set_space("s");
  for (uint64_t id : {u[0], u[1], u[2]}) pow.add_ids(id);
  for (float e : {0.5f, -1.0f, 2.25f}) pow.add_exponents(e);
  brain::v1::PowerResponse pow_out;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Power, pow, &pow_out).ok());
  ASSERT_TRUE(h.Power(range(21, 3), range(4, 3), std::vector<float>{0.5f, -1.0f, 2.25f}).ok());
  expect_same("power", {pow_out.ids().begin(), pow_out.ids().end()}, range(21, 3));

  const std::vector<float> cos = calls_->Similarity("s", {a[0], a[1], bound[0], unbound[0]}, {a[0], u[1], u[0], a[1]});
  std::vector<float> lib_cos(4);
  ASSERT_TRUE(h.Similarity(std::vector<int32_t>{0, 1, 8, 12}, std::vector<int32_t>{0, 5, 4, 1}, lib_cos).ok());
  ASSERT_EQ(cos.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(cos[i], lib_cos[i], 1e-6f) << i;
  EXPECT_NEAR(cos[0], 1.0f, 1e-6f);
}

// A space of capacity 3 runs library calls of at most 3 entries: longer lists go in pieces, and
// a superposition's repeated ids are merged into one weighted term.
TEST_F(MemoryServiceTest, SmallSpacesTakeLongListsInPieces) {
  ASSERT_TRUE(calls_->CreateSpace("tiny", 16, 3).ok());
  const std::vector<uint64_t> ab = calls_->PutRandom("tiny", VECTOR_KIND_GAUSSIAN, 4, 2);
  ASSERT_EQ(ab.size(), 2u);
  brain::v1::SuperposeRequest sup;
  sup.set_space("tiny");
  brain::v1::SuperposeGroup* g = sup.add_groups();
  for (uint64_t id : {ab[0], ab[1], ab[0], ab[0], ab[1]}) g->add_ids(id);
  for (float w : {1.0f, 0.5f, 1.0f, 1.0f, 1.5f}) g->add_weights(w);
  brain::v1::SuperposeResponse sum;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Superpose, sup, &sum).ok());
  grpc::Status s;
  const std::vector<std::vector<float>> v = calls_->Get("tiny", {ab[0], ab[1], sum.ids(0)}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (size_t j = 0; j < 16; ++j) EXPECT_NEAR(v[2][j], 3 * v[0][j] + 2 * v[1][j], 1e-5f) << j;

  const std::vector<uint64_t> five_a = {ab[0], ab[1], sum.ids(0), ab[0], ab[1]};
  const std::vector<uint64_t> five_b = {ab[0], ab[0], ab[0], ab[1], ab[1]};
  const std::vector<float> cos = calls_->Similarity("tiny", five_a, five_b, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(cos.size(), 5u);
  EXPECT_NEAR(cos[0], 1.0f, 1e-6f);
  EXPECT_EQ(cos[1], cos[3]);
  EXPECT_NEAR(cos[4], 1.0f, 1e-6f);
  const brain::v1::CleanupResponse best = calls_->Cleanup("tiny", five_b, 1, {}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(best.results_size(), 5);
  for (int q = 0; q < 5; ++q) EXPECT_EQ(best.results(q).ids(0), sum.ids(0)) << q;  // 3a + 2b is nearest
}

TEST_F(MemoryServiceTest, KnownHrrNumbers) {
  constexpr uint32_t n = 16;
  ASSERT_TRUE(calls_->CreateSpace("hrr", 1024, 256).ok());
  const std::vector<uint64_t> a = calls_->PutRandom("hrr", VECTOR_KIND_GAUSSIAN, 21, n);
  const std::vector<uint64_t> b = calls_->PutRandom("hrr", VECTOR_KIND_GAUSSIAN, 22, n);
  const std::vector<uint64_t> keys = calls_->PutRandom("hrr", VECTOR_KIND_UNITARY, 23, n);
  ASSERT_EQ(a.size(), n);

  // Gaussian keys: unbind(bind(a, b), a) ~ b at cos ~ 0.71 (DESIGN.md section 5).
  const std::vector<uint64_t> decoded = calls_->Unbind("hrr", calls_->Bind("hrr", a, b), a);
  const std::vector<float> cos = calls_->Similarity("hrr", decoded, b);
  ASSERT_EQ(cos.size(), n);
  EXPECT_GT(std::accumulate(cos.begin(), cos.end(), 0.0f) / float(n), 0.6f);
  for (float c : cos) EXPECT_GT(c, 0.45f);

  // Unitary keys: exactly.
  const std::vector<uint64_t> exact = calls_->Unbind("hrr", calls_->Bind("hrr", keys, b), keys);
  for (float c : calls_->Similarity("hrr", exact, b)) EXPECT_NEAR(c, 1.0f, 1e-5f);

  // Permuting back restores; half powers compose to the whole.
  brain::v1::PermuteRequest perm;
  perm.set_space("hrr");
  perm.add_ids(b[0]);
  perm.add_shifts(7);
  brain::v1::PermuteResponse there;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Permute, perm, &there).ok());
  perm.set_ids(0, there.ids(0));
  perm.set_shifts(0, -7);
  brain::v1::PermuteResponse back;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Permute, perm, &back).ok());
  EXPECT_NEAR(calls_->Similarity("hrr", {back.ids(0)}, {b[0]})[0], 1.0f, 1e-5f);
  EXPECT_LT(std::abs(calls_->Similarity("hrr", {there.ids(0)}, {b[0]})[0]), 0.2f);

  brain::v1::PowerRequest pow;
  pow.set_space("hrr");
  pow.add_ids(keys[0]);
  pow.add_exponents(0.5f);
  brain::v1::PowerResponse half;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Power, pow, &half).ok());
  const std::vector<uint64_t> whole = calls_->Bind("hrr", {half.ids(0)}, {half.ids(0)});
  EXPECT_NEAR(calls_->Similarity("hrr", whole, {keys[0]})[0], 1.0f, 1e-4f);
}

TEST_F(MemoryServiceTest, CleanupFindsTheStoredItemAndNeverTheQueryItself) {
  ASSERT_TRUE(calls_->CreateSpace("items", 1024, 64).ok());
  const std::vector<uint64_t> items = calls_->PutRandom("items", VECTOR_KIND_GAUSSIAN, 31, 20);
  const std::vector<uint64_t> key = calls_->PutRandom("items", VECTOR_KIND_GAUSSIAN, 32, 1);
  ASSERT_EQ(items.size(), 20u);
  // A noisy copy of item 7 (cos ~0.7 with it), stored beside the items.
  const std::vector<uint64_t> noisy = calls_->Unbind("items", calls_->Bind("items", key, {items[7]}), key);
  ASSERT_EQ(noisy.size(), 1u);

  grpc::Status s;
  brain::v1::CleanupResponse all = calls_->Cleanup("items", {noisy[0], items[3]}, 3, {}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(all.results_size(), 2);
  ASSERT_EQ(all.results(0).ids_size(), 3);
  EXPECT_EQ(all.results(0).ids(0), items[7]);
  EXPECT_GT(all.results(0).cosines(0), 0.5f);
  EXPECT_GE(all.results(0).cosines(0), all.results(0).cosines(1));
  EXPECT_GE(all.results(0).cosines(1), all.results(0).cosines(2));
  for (int i = 0; i < 3; ++i) EXPECT_NE(all.results(0).ids(i), noisy[0]);  // never itself
  // items[3]'s best match is not itself, and no other item is close to it.
  EXPECT_NE(all.results(1).ids(0), items[3]);
  EXPECT_LT(all.results(1).cosines(0), 0.3f);

  // Given candidates (repeats count once, the query itself is skipped, fewer than k remain).
  brain::v1::CleanupResponse some =
      calls_->Cleanup("items", {noisy[0]}, 5, {items[2], items[7], items[2], noisy[0]}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(some.results(0).ids_size(), 2);
  EXPECT_EQ(some.results(0).ids(0), items[7]);
  EXPECT_EQ(some.results(0).ids(1), items[2]);
  EXPECT_NEAR(some.results(0).cosines(0), all.results(0).cosines(0), 1e-6f);
}

TEST_F(MemoryServiceTest, UnknownSpacesAndIdsAreNotFoundByName) {
  ASSERT_TRUE(calls_->CreateSpace("s", 64, 8).ok());
  const std::vector<uint64_t> ids = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 2);
  grpc::Status s;
  calls_->PutRandom("nowhere", VECTOR_KIND_GAUSSIAN, 1, 2, 0, &s);
  ExpectCode(s, grpc::StatusCode::NOT_FOUND, "no space named 'nowhere'");
  calls_->Bind("s", ids, {ids[0], 999}, &s);
  ExpectCode(s, grpc::StatusCode::NOT_FOUND, "b[1] = 999: no vector with this id in space 's'");
  calls_->Get("s", {0}, &s);
  ExpectCode(s, grpc::StatusCode::NOT_FOUND, "ids[0] = 0");
  calls_->Cleanup("s", {ids[0]}, 1, {ids[1], 12345}, &s);
  ExpectCode(s, grpc::StatusCode::NOT_FOUND, "candidates[1] = 12345");
}

TEST_F(MemoryServiceTest, WrongDimensionsAndNonFiniteValuesNameTheElement) {
  ASSERT_TRUE(calls_->CreateSpace("s", 4, 8).ok());
  grpc::Status s;
  calls_->PutValues("s", {{1, 2, 3, 4}, {1, 2, 3}}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "values.vectors[1] has 3 values; space 's' has dimension 4");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  calls_->PutValues("s", {{1, 2, 3, 4}, {1, 2, nan, 4}}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "values.vectors[1], element 2 is not finite");
  calls_->PutValues("s", {{std::numeric_limits<float>::infinity(), 0, 0, 0}}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "values.vectors[0], element 0 is not finite");
  EXPECT_EQ(Stored("s"), 0);

  const std::vector<uint64_t> ids = calls_->PutRandom("s", VECTOR_KIND_UNITARY, 1, 2);
  brain::v1::PowerRequest pow;
  pow.set_space("s");
  pow.add_ids(ids[0]);
  pow.add_ids(ids[1]);
  pow.add_exponents(1.0f);
  pow.add_exponents(nan);
  brain::v1::PowerResponse out;
  ExpectCode(calls_->Call(&Memory::Stub::Power, pow, &out), grpc::StatusCode::INVALID_ARGUMENT,
             "exponents[1] is not finite");
  brain::v1::SuperposeRequest sup;
  sup.set_space("s");
  sup.add_groups()->add_ids(ids[0]);
  sup.mutable_groups(0)->add_weights(std::numeric_limits<float>::infinity());
  brain::v1::SuperposeResponse sup_out;
  ExpectCode(calls_->Call(&Memory::Stub::Superpose, sup, &sup_out), grpc::StatusCode::INVALID_ARGUMENT,
             "groups[0].weights[0] is not finite");
  EXPECT_EQ(Stored("s"), 2);
}

// Values must be bounded, not merely finite (memory.proto, Vector): four values of 3e38 are
// finite, but their sum, the spectrum's bin 0, is not, and Get answered NaN. A Put beyond the
// bound is refused naming the element and the bound, and stores nothing; a vector at the bound is
// stored and comes back within the stated 2e-6 of its largest value.
TEST_F(MemoryServiceTest, PutBeyondTheBoundIsRefusedNamingTheElementAndTheBound) {
  ASSERT_TRUE(calls_->CreateSpace("s", 4, 8).ok());
  const float bound = hrr::kMaxValue;
  grpc::Status s;
  calls_->PutValues("s", {{1, 2, 3, 4}, {0, -std::nextafter(bound, INFINITY), 0, 0}}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT,
             "values.vectors[1], element 1 = -4.29497e+09 is beyond the bound on values, |x| <= 4294967296 (2^32)");
  calls_->PutValues("s", {{3e38f, 3e38f, 3e38f, 3e38f}}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "values.vectors[0], element 0 = 3e+38 is beyond the bound");
  EXPECT_EQ(Stored("s"), 0);

  const std::vector<std::vector<float>> edge = {{bound, -bound, bound, bound}};
  const std::vector<uint64_t> ids = calls_->PutValues("s", edge, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ids, (std::vector<uint64_t>{1}));  // the refused Puts used up no id
  const std::vector<std::vector<float>> got = calls_->Get("s", ids, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(got[0][j], edge[0][j], 2e-6 * bound) << j;
}

// Operations on stored vectors can make results beyond the range of stored vectors (memory.proto:
// products of large bins, large exponents or weights). The call is refused naming the result and
// stores nothing, not even its results within the range.
TEST_F(MemoryServiceTest, ResultsBeyondTheRangeAreRefusedAndStoreNothing) {
  ASSERT_TRUE(calls_->CreateSpace("s", 4, 16).ok());
  grpc::Status s;
  const std::vector<uint64_t> big = calls_->PutValues("s", {{0x1p30f, 0x1p30f, 0x1p30f, 0x1p30f}}, &s);  // bin 0: 2^32
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::vector<uint64_t> g = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 2);
  ASSERT_EQ(Stored("s"), 3);

  calls_->Bind("s", {g[0], big[0]}, {g[1], big[0]}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT,
             "result 1, bin 0 = (1.84467e+19, 0) is beyond the range of a stored bin, |re| and |im| <= "
             "562949953421312 (2^49): the operation's result is too large to keep; nothing was stored");
  brain::v1::PowerRequest pow;
  pow.set_space("s");
  pow.add_ids(big[0]);
  pow.add_exponents(8.0f);
  brain::v1::PowerResponse pow_out;
  ExpectCode(calls_->Call(&Memory::Stub::Power, pow, &pow_out), grpc::StatusCode::INVALID_ARGUMENT,
             "result 0, bin 0 = (inf, 0) is not finite");
  brain::v1::SuperposeRequest sup;
  sup.set_space("s");
  sup.add_groups()->add_ids(g[0]);
  brain::v1::SuperposeGroup* large = sup.add_groups();
  large->add_ids(big[0]);
  large->add_weights(1e30f);
  brain::v1::SuperposeResponse sup_out;
  ExpectCode(calls_->Call(&Memory::Stub::Superpose, sup, &sup_out), grpc::StatusCode::INVALID_ARGUMENT,
             "result 1, bin 0 = (inf, 0) is not finite");
  // Normalised, a sum of finite bins whose squared norm overflows float is refused too (it used to
  // be stored as the zero vector).
  sup.set_normalize(true);
  large->set_ids(0, g[0]);
  ExpectCode(calls_->Call(&Memory::Stub::Superpose, sup, &sup_out), grpc::StatusCode::INVALID_ARGUMENT,
             "result 1, bin 0 = (nan, nan) is not finite");
  EXPECT_EQ(Stored("s"), 3);
  // No id was used up, and a result within the range is stored.
  EXPECT_EQ(calls_->Bind("s", {g[0]}, {g[1]}), (std::vector<uint64_t>{4}));
}

// Cosines of tiny vectors are finite: they were Inf where the product of the squared norms
// underflowed (norms below ~6e-12).
TEST_F(MemoryServiceTest, CosinesOfTinyVectorsAreFinite) {
  ASSERT_TRUE(calls_->CreateSpace("s", 4, 8).ok());
  grpc::Status s;
  const std::vector<uint64_t> ids =
      calls_->PutValues("s", {{1e-13f, 2e-13f, -1e-13f, 3e-13f}, {1e-13f, 2e-13f, 1e-13f, -3e-13f}}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::vector<float> cos = calls_->Similarity("s", {ids[0], ids[0]}, {ids[0], ids[1]});
  ASSERT_EQ(cos.size(), 2u);
  EXPECT_NEAR(cos[0], 1.0f, 1e-6f);
  EXPECT_NEAR(cos[1], (1.0f + 4.0f - 1.0f - 9.0f) / 15.0f, 1e-6f);
}

TEST_F(MemoryServiceTest, ABatchWithOneBadElementAppliesNothing) {
  ASSERT_TRUE(calls_->CreateSpace("s", 64, 16).ok());
  const std::vector<uint64_t> ids = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 4);
  ASSERT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 4}));
  grpc::Status s;
  calls_->Bind("s", {1, 2, 77, 4}, {4, 3, 2, 1}, &s);
  ExpectCode(s, grpc::StatusCode::NOT_FOUND, "a[2] = 77");
  calls_->PutValues("s", {std::vector<float>(64, 0.5f), std::vector<float>(63, 0.5f)}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "values.vectors[1]");
  brain::v1::DeleteRequest del;
  del.set_space("s");
  for (uint64_t id : {1, 2, 99}) del.add_ids(id);
  brain::v1::DeleteResponse deleted;
  ExpectCode(calls_->Call(&Memory::Stub::Delete, del, &deleted), grpc::StatusCode::NOT_FOUND, "ids[2] = 99");
  EXPECT_EQ(Stored("s"), 4);
  calls_->Get("s", {1, 2, 3, 4}, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();  // none was deleted
  // No id was used up by the refused calls.
  EXPECT_EQ(calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 2, 1), (std::vector<uint64_t>{5}));

  del.clear_ids();
  del.add_ids(5);
  del.add_ids(5);
  ExpectCode(calls_->Call(&Memory::Stub::Delete, del, &deleted), grpc::StatusCode::INVALID_ARGUMENT,
             "ids[1] = 5 repeats ids[0]");
  del.clear_ids();
  del.add_ids(5);
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Delete, del, &deleted).ok());
  EXPECT_EQ(deleted.deleted(), 1u);
  ExpectCode(calls_->Call(&Memory::Stub::Delete, del, &deleted), grpc::StatusCode::NOT_FOUND, "ids[0] = 5");
  EXPECT_EQ(Stored("s"), 4);
}

TEST_F(MemoryServiceTest, AFullSpaceOrArenaAppliesNothing) {
  ASSERT_TRUE(calls_->CreateSpace("small", 64, 4).ok());
  grpc::Status s;
  const std::vector<uint64_t> ids = calls_->PutRandom("small", VECTOR_KIND_GAUSSIAN, 1, 3);
  calls_->PutRandom("small", VECTOR_KIND_GAUSSIAN, 1, 2, 3, &s);
  ExpectCode(s, grpc::StatusCode::RESOURCE_EXHAUSTED, "space 'small' has room for 1 more vectors (capacity 4)");
  calls_->Bind("small", {ids[0], ids[1]}, {ids[1], ids[2]}, &s);
  ExpectCode(s, grpc::StatusCode::RESOURCE_EXHAUSTED, "room for 1 more");
  EXPECT_EQ(Stored("small"), 3);
  EXPECT_EQ(calls_->Bind("small", {ids[0]}, {ids[1]}, &s).size(), 1u);
  calls_->Unbind("small", {ids[0]}, {ids[1]}, &s);
  ExpectCode(s, grpc::StatusCode::RESOURCE_EXHAUSTED, "room for 0 more");
  EXPECT_EQ(Stored("small"), 4);

  // The arena: a 16 MiB budget holds one space of 2048 vectors of dimension 1024 (8 MiB of
  // spectra, 1 MiB of work area, the index), not two.
  ASSERT_TRUE(calls_->CreateSpace("big", 1024, 2048).ok());
  const uint64_t used = calls_->List().limits().arena_used_bytes();
  ExpectCode(calls_->CreateSpace("big2", 1024, 2048), grpc::StatusCode::RESOURCE_EXHAUSTED,
             "space 'big2' (dimension 1024, capacity 2048) does not fit");
  EXPECT_EQ(calls_->List().spaces_size(), 2);
  EXPECT_EQ(calls_->List().limits().arena_used_bytes(), used);
  ASSERT_TRUE(calls_->DeleteSpace("big").ok());
  EXPECT_TRUE(calls_->CreateSpace("big2", 1024, 2048).ok());
}

TEST_F(MemoryServiceTest, RequestsBeyondTheLimitsAreRefusedWhole) {
  ASSERT_TRUE(calls_->CreateSpace("s", 64, 1024).ok());
  grpc::Status s;
  calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, kMaxRequestVectors + 1, 0, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "random.count = 257 must be in 1..256");
  calls_->PutRandom("s", brain::v1::VECTOR_KIND_UNSPECIFIED, 1, 1, 0, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "random.kind 0");
  const std::vector<uint64_t> ids = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, kMaxRequestVectors);
  ASSERT_EQ(ids.size(), size_t(kMaxRequestVectors));
  std::vector<uint64_t> too_many(ids);
  too_many.push_back(ids[0]);
  calls_->Similarity("s", too_many, too_many, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "a has 257 entries; a request takes at most 256");
  calls_->Similarity("s", {ids[0], ids[1]}, {ids[0]}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "b has 1 entries and a has 2");
  calls_->Bind("s", {}, {}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "a is empty");
  calls_->Cleanup("s", {ids[0]}, 0, {}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "k = 0 must be in 1..32");
  calls_->Cleanup("s", {ids[0]}, 33, {}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "k = 33");
  // The whole space is 256 vectors: 16 queries make 4096 comparisons, 17 too many.
  calls_->Cleanup("s", std::vector<uint64_t>(ids.begin(), ids.begin() + 17), 1, {}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "a Cleanup at dimension 64 makes at most 4096");
  calls_->Cleanup("s", std::vector<uint64_t>(ids.begin(), ids.begin() + 16), 1, {}, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  calls_->Cleanup("s", std::vector<uint64_t>(ids.begin(), ids.begin() + 17), 1, ids, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "17 queries x 256 candidates");
  brain::v1::PutRequest no_source;
  no_source.set_space("s");
  brain::v1::PutResponse out;
  ExpectCode(calls_->Call(&Memory::Stub::Put, no_source, &out), grpc::StatusCode::INVALID_ARGUMENT,
             "a Put needs values or random");
  EXPECT_EQ(Stored("s"), kMaxRequestVectors);
}

// The limits hold at dimension 1024 and below and shrink in proportion above: at 4096, a quarter.
TEST_F(MemoryServiceTest, LargerDimensionsTakeProportionallyFewerVectors) {
  ASSERT_TRUE(calls_->CreateSpace("wide", 4096, 256).ok());
  grpc::Status s;
  calls_->PutRandom("wide", VECTOR_KIND_GAUSSIAN, 1, 65, 0, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "names 65 vectors; at dimension 4096 a request takes at most 64");
  const std::vector<uint64_t> ids = calls_->PutRandom("wide", VECTOR_KIND_GAUSSIAN, 1, 64, 0, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // 64 x 4096 / 1024 = 16 queries over the 64 vectors are the 1024 comparisons allowed.
  calls_->Cleanup("wide", std::vector<uint64_t>(ids.begin(), ids.begin() + 17), 1, {}, &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "a Cleanup at dimension 4096 makes at most 1024");
  calls_->Cleanup("wide", std::vector<uint64_t>(ids.begin(), ids.begin() + 16), 1, {}, &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Stored("wide"), 64);
}

// With the request limit raised, a Get still answers at most 2^19 values (2 MiB).
TEST_F(MemoryServiceTest, AGetAnswersAtMostTwoMebibytes) {
  server_.reset();
  ServerConfig config = MemoryConfig();
  config.memory_max_request_vectors = 1024;
  StartServer(config);
  ASSERT_TRUE(calls_->CreateSpace("s", 1024, 4).ok());
  const std::vector<uint64_t> one = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 1);
  grpc::Status s;
  calls_->Get("s", std::vector<uint64_t>(513, one[0]), &s);
  ExpectCode(s, grpc::StatusCode::INVALID_ARGUMENT, "a Get returns at most 524288");
  EXPECT_EQ(calls_->Get("s", std::vector<uint64_t>(512, one[0]), &s).size(), 512u);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(MemoryServiceTest, MetricsCountEveryOperation) {
  ASSERT_TRUE(calls_->CreateSpace("s", 64, 32).ok());
  const std::vector<uint64_t> a = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 1, 3);
  const std::vector<uint64_t> b = calls_->Bind("s", a, a);
  calls_->Similarity("s", a, b);
  calls_->Cleanup("s", {a[0]}, 2);
  calls_->Get("s", {a[0], a[1]});
  brain::v1::DeleteRequest del;
  del.set_space("s");
  del.add_ids(b[0]);
  brain::v1::DeleteResponse deleted;
  ASSERT_TRUE(calls_->Call(&Memory::Stub::Delete, del, &deleted).ok());
  const std::string text = server_->metrics().Scrape();
  for (const char* op :
       {"put", "get", "delete", "bind", "unbind", "superpose", "permute", "power", "similarity", "cleanup"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("brain_hrr_operations_total{op=\"", op, "\"}"))) << op;
  }
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"put\"} 3"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"bind\"} 3"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"similarity\"} 3"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"cleanup\"} 1"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"get\"} 2"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"delete\"} 1"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"unbind\"} 0"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_vectors_stored 5"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("brain_hrr_arena_bytes ", 16 << 20)));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("brain_hrr_arena_used_bytes ", calls_->List().limits().arena_used_bytes())));
}

TEST_F(MemoryServiceTest, RobotsAreServedWhileTheMemoryServiceIsFlooded) {
  ASSERT_TRUE(calls_->CreateSpace("flood", 1024, 512).ok());
  const std::vector<uint64_t> items = calls_->PutRandom("flood", VECTOR_KIND_GAUSSIAN, 5, 256);
  ASSERT_EQ(items.size(), 256u);
  std::atomic<bool> robot_done{false};
  std::atomic<int> memory_calls{0}, memory_failures{0};
  auto flood = [&](int which) {
    MemoryCalls calls(channel_);
    while (!robot_done.load()) {
      grpc::Status s;
      switch (which) {
        case 0:
          calls.Similarity("flood", items, std::vector<uint64_t>(items.rbegin(), items.rend()), &s);
          break;
        case 1: {
          calls.Cleanup("flood", std::vector<uint64_t>(items.begin(), items.begin() + 8), 4, {}, &s);
          break;
        }
        default: {
          const std::vector<uint64_t> made =
              calls.Bind("flood", std::vector<uint64_t>(items.begin(), items.begin() + 64),
                         std::vector<uint64_t>(items.begin() + 64, items.begin() + 128), &s);
          if (s.ok()) {
            brain::v1::DeleteRequest del;
            del.set_space("flood");
            for (uint64_t id : made) del.add_ids(id);
            brain::v1::DeleteResponse out;
            s = calls.Call(&Memory::Stub::Delete, del, &out);
          }
          break;
        }
      }
      memory_calls.fetch_add(1);
      if (!s.ok()) memory_failures.fetch_add(1);
    }
  };
  std::vector<std::thread> flooders;
  for (int i = 0; i < 3; ++i) flooders.emplace_back(flood, i);

  auto brain_stub = brain::v1::Brain::NewStub(channel_);
  testing::RawStream robot(brain_stub.get());
  ASSERT_TRUE(robot.Open(testing::MakeHello("r1")).has_value());
  // Each frame must be run within 2 s of its arrival, or the server answers DEADLINE_EXCEEDED: a
  // generous bound on how long a Memory request may hold up a robot.
  for (uint64_t seq = 1; seq <= 200; ++seq) {
    std::optional<brain::v1::MotorFrame> m =
        robot.Step(testing::FrameRequest(seq, {0.1f, -0.2f, 0.3f, 0.0f}, std::nullopt, 2'000'000));
    ASSERT_TRUE(m.has_value()) << seq;
    EXPECT_EQ(m->status(), brain::v1::OK) << seq << " " << m->detail();
    EXPECT_EQ(m->seq(), seq);
  }
  robot_done.store(true);
  for (std::thread& t : flooders) t.join();
  EXPECT_TRUE(robot.Close().ok());
  std::printf("200 robot frames answered OK beside %d Memory calls\n", memory_calls.load());
  EXPECT_GT(memory_calls.load(), 3);
  EXPECT_EQ(memory_failures.load(), 0);
  EXPECT_EQ(Stored("flood"), 256);
}

TEST_F(MemoryServiceTest, ShutdownAnswersEveryMemoryCall) {
  ASSERT_TRUE(calls_->CreateSpace("s", 1024, 256).ok());
  const std::vector<uint64_t> items = calls_->PutRandom("s", VECTOR_KIND_GAUSSIAN, 5, 256);
  std::atomic<int> refused{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&] {
      MemoryCalls calls(channel_);
      for (;;) {
        grpc::Status s;
        calls.Similarity("s", items, items, &s);
        if (s.ok()) continue;
        EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::CANCELLED)
            << s.error_code() << " " << s.error_message();
        refused.fetch_add(1);
        return;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_->Shutdown();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(refused.load(), 3);
}

TEST(MemoryServiceOffTest, ZeroArenaBytesServesNoMemory) {
  ServerConfig c = testing::TestServerConfig();
  c.memory_arena_bytes = 0;
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(c, "test");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->memory_service(), nullptr);
  MemoryCalls calls(
      grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(calls.CreateSpace("s", 64, 4).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace fieldbrain::server
