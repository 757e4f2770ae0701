// SHA-256 of stored vectors (OpenSSL's EVP API), so that memory corruption is reported rather
// than answered: the Memory service takes a vector's digest over its half spectrum (the bytes the
// space holds) when the vector is written and checks it before the vector leaves the server.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"

namespace fieldbrain::server::memory {

using Digest = std::array<uint8_t, 32>;

// One reusable hashing context (the digest is fetched once, not per vector). Not thread-safe.
class VectorDigester {
 public:
  // INTERNAL when OpenSSL cannot provide SHA-256.
  static absl::StatusOr<std::unique_ptr<VectorDigester>> Create();
  ~VectorDigester();
  VectorDigester(const VectorDigester&) = delete;
  VectorDigester& operator=(const VectorDigester&) = delete;

  absl::StatusOr<Digest> Sha256(std::span<const std::byte> bytes);

 private:
  struct State;
  explicit VectorDigester(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace fieldbrain::server::memory
