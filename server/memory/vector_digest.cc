#include "server/memory/vector_digest.h"

#include <openssl/evp.h>

#include "absl/status/status.h"

namespace fieldbrain::server::memory {
namespace {

struct MdDeleter {
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
};
struct CtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

}  // namespace

struct VectorDigester::State {
  std::unique_ptr<EVP_MD, MdDeleter> md;
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx;
};

absl::StatusOr<std::unique_ptr<VectorDigester>> VectorDigester::Create() {
  auto state = std::make_unique<State>();
  state->md.reset(EVP_MD_fetch(nullptr, "SHA256", nullptr));
  state->ctx.reset(EVP_MD_CTX_new());
  if (state->md == nullptr || state->ctx == nullptr) return absl::InternalError("OpenSSL provides no SHA-256");
  return std::unique_ptr<VectorDigester>(new VectorDigester(std::move(state)));
}

VectorDigester::VectorDigester(std::unique_ptr<State> state) : state_(std::move(state)) {}

VectorDigester::~VectorDigester() = default;

absl::StatusOr<Digest> VectorDigester::Sha256(std::span<const std::byte> bytes) {
  Digest digest;
  unsigned int length = 0;
  if (EVP_DigestInit_ex(state_->ctx.get(), state_->md.get(), nullptr) != 1 ||
      EVP_DigestUpdate(state_->ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(state_->ctx.get(), digest.data(), &length) != 1 || length != digest.size()) {
    return absl::InternalError("SHA-256 of a stored vector failed in OpenSSL");
  }
  return digest;
}

}  // namespace fieldbrain::server::memory
