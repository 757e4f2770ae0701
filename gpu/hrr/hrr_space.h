// HrrSpace: a batched HRR library over one store of vectors, with a CPU backend (cpu/, KissFFT)
// and a CUDA backend (cuda/, cuFFT + cuBLAS) behind this one interface, like the engines.
//
// A space has `capacity` slots, each holding one vector of dimension `dim` as its half spectrum
// (gpu/hrr/hrr_math.h): a new space holds zero vectors. Vectors enter as real values (Put: one
// forward FFT each), as spectra, or made from a seed (Random, no FFT); they leave as real values
// (Get: one inverse FFT each) or spectra. Every other operation works bin by bin on the stored
// spectra, so it needs no FFT at all.
//
// Every call is batched over slot lists of at most `max_batch` entries, checks all its arguments
// before it changes anything (a bad call changes nothing and says which element is wrong), may
// write a slot it also reads, and allocates nothing once the space is made. Same inputs give the
// same bits on the same backend. A space is not thread-safe: one thread calls it.
//
// Range: a value that is finite need not have a finite spectrum (1024 values near 3e38 sum past
// FLT_MAX), so what enters is bounded, not merely finite: Put takes values of magnitude at most
// kMaxValue, PutSpectra bins whose parts are at most kMaxBin. Within that range every norm, dot
// product, cosine and inverse FFT of the library is finite (kMaxBin below). Results are not
// checked: Bind and Unbind (products of large bins), Power (large exponents) and Superpose (large
// weights, or a normalised sum whose squared norm overflows float, which comes out NaN rather than
// zero) can leave the range, up to Inf and NaN. Random, Project and Inverse stay within it, and
// Permute keeps every bin's magnitude. A caller that keeps results checks them with CheckBins
// (hrr_checks.h): the Memory service does, on the copy it reads back for its digests.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr {

struct HrrConfig {
  int dim = 1024;        // even, 2..kMaxDim
  int capacity = 4096;   // vector slots
  int max_batch = 4096;  // entries per call (slots, terms, queries)
};

inline constexpr int kMaxDim = 1 << 16;
inline constexpr int kMaxTopK = 64;

// The largest magnitude of a value Put takes (2^32). Its bins' parts are then at most
// kMaxDim x kMaxValue = 2^48: half of kMaxBin, so that Put and Random vectors and their
// permutations (a turned bin's parts grow by up to sqrt(2)) always fit.
inline constexpr float kMaxValue = 0x1p32f;
// The largest |re| or |im| of a stored bin (2^49). A dot product or squared norm sums D/2 + 1
// terms of at most 4 kMaxBin^2 = 2^100: below 2^116 for any D <= kMaxDim, far from FLT_MAX
// (~2^128); an inverse FFT's sums stay below D x 2 kMaxBin = 2^66.
inline constexpr float kMaxBin = 0x1p49f;

// Where a space keeps its vectors. Empty: the space allocates them itself. Otherwise a region the
// caller owns and keeps alive longer than the space (host memory for the CPU backend, device
// memory for the CUDA backend), at least StorageBytes(config) bytes, 256-byte aligned: so that one
// arena allocated at start can hold many spaces (the Memory service). The space zeroes it.
struct HrrStorage {
  void* data = nullptr;
  int64_t bytes = 0;
};

// Bytes of vector storage a space of `config` needs: each slot's spectrum and its cached norm.
inline int64_t StorageBytes(const HrrConfig& config) {
  const int64_t spectra = int64_t(config.capacity) * Bins(config.dim) * int64_t(sizeof(Cf));
  const int64_t norms = int64_t(config.capacity) * int64_t(sizeof(float));
  return (spectra + 255) / 256 * 256 + (norms + 255) / 256 * 256;
}

enum class VectorKind {
  kGaussian,  // entries N(0, 1/D): the classic HRR vector, norm ~1
  kUnitary,   // |A_k| = 1 at every bin: bind is invertible exactly, powers are well defined
};

class HrrSpace {
 public:
  virtual ~HrrSpace() = default;

  virtual std::string_view backend() const = 0;  // "cpu" or "cuda"
  virtual const HrrConfig& config() const = 0;
  int dim() const { return config().dim; }
  int bins() const { return Bins(config().dim); }
  int capacity() const { return config().capacity; }
  // Bytes the space allocated itself (vectors and norms unless given an HrrStorage, staging,
  // FFT work areas).
  virtual int64_t bytes() const = 0;

  // slots[i] <- the vector values[i * dim, (i + 1) * dim). Values that are not finite or beyond
  // +-kMaxValue are refused.
  virtual absl::Status Put(std::span<const int32_t> slots, std::span<const float> values) = 0;
  // values[i * dim, ...) <- the real vector in slots[i]. After Put, each value is the one put to
  // within 2e-6 of the vector's largest magnitude plus 2^-148 (two steps of float's subnormal
  // range), the two FFTs' rounding, and the sign of a zero is not kept: measured on the CPU
  // backend (tests/hrr/hrr_space_test.cc).
  virtual absl::Status Get(std::span<const int32_t> slots, std::span<float> values) = 0;
  // The same with half spectra, bins() values per vector; PutSpectra refuses a part beyond
  // +-kMaxBin (CheckBins).
  virtual absl::Status PutSpectra(std::span<const int32_t> slots, std::span<const Cf> spectra) = 0;
  virtual absl::Status GetSpectra(std::span<const int32_t> slots, std::span<Cf> spectra) = 0;
  // slots[i] <- vector ids[i] of the `kind` stream of `seed` (a pure function of the four).
  virtual absl::Status Random(std::span<const int32_t> slots, VectorKind kind, uint64_t seed,
                              std::span<const uint64_t> ids) = 0;
  virtual absl::Status Zero(std::span<const int32_t> slots) = 0;

  // out[i] <- a[i] (*) b[i]
  virtual absl::Status Bind(std::span<const int32_t> out, std::span<const int32_t> a,
                            std::span<const int32_t> b) = 0;
  // out[i] <- c[i] (*) involution(key[i]): the approximate inverse of bind, exact for unitary keys.
  virtual absl::Status Unbind(std::span<const int32_t> out, std::span<const int32_t> c,
                              std::span<const int32_t> key) = 0;
  // out[i] <- the exact inverse of a[i] (1 / A_k per bin; for unitary a, its involution).
  virtual absl::Status Inverse(std::span<const int32_t> out, std::span<const int32_t> a) = 0;
  // out[i] <- the unitary vector nearest a[i] (A_k / |A_k| per bin).
  virtual absl::Status Project(std::span<const int32_t> out, std::span<const int32_t> a) = 0;
  // out[i] <- a[i] cyclically shifted by shifts[i] places (the permutation that commutes with bind).
  virtual absl::Status Permute(std::span<const int32_t> out, std::span<const int32_t> a,
                               std::span<const int32_t> shifts) = 0;
  // out[i] <- base[i]^exponents[i] (fractional binding; meant for unitary bases).
  virtual absl::Status Power(std::span<const int32_t> out, std::span<const int32_t> base,
                             std::span<const float> exponents) = 0;
  // out[g] <- sum of weights[j] * terms[j] over j in [offsets[g], offsets[g + 1]) (offsets has
  // out.size() + 1 ascending entries from 0 to terms.size(); weights empty = all 1), scaled to
  // norm 1 when `normalize` (a zero sum stays zero).
  virtual absl::Status Superpose(std::span<const int32_t> out, std::span<const int32_t> offsets,
                                 std::span<const int32_t> terms, std::span<const float> weights,
                                 bool normalize) = 0;
  // cosines[i] <- cos(a[i], b[i]); 0 when either is the zero vector.
  virtual absl::Status Similarity(std::span<const int32_t> a, std::span<const int32_t> b,
                                  std::span<float> cosines) = 0;
  // For each query q, the k slots of [item_begin, item_begin + item_count) whose vectors have the
  // largest cosine with q, best first (ties: lower slot first); zero vectors are never returned,
  // and where fewer than k remain the rest of the row is slot -1, cosine 0. top_slots and
  // top_cosines hold queries.size() * k entries.
  virtual absl::Status Cleanup(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                               std::span<int32_t> top_slots, std::span<float> top_cosines) = 0;
};

// "cpu", "cuda", or "auto" (CUDA when this build has it and a device is present, else CPU).
absl::StatusOr<std::unique_ptr<HrrSpace>> MakeHrrSpace(std::string_view backend, const HrrConfig& config,
                                                       HrrStorage storage = {});

}  // namespace fieldbrain::hrr
