// Argument checks shared by the HrrSpace backends, so both refuse the same calls with the same
// words. Each returns INVALID_ARGUMENT naming the offending argument and element, or OK.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr {

absl::Status CheckConfig(const HrrConfig& config);
// An empty storage, or one of at least StorageBytes(config) bytes, 256-byte aligned.
absl::Status CheckStorage(const HrrStorage& storage, const HrrConfig& config);

// Every entry of `slots` (named `what` in the message) is a slot of a space of `capacity`, and
// there are at most max_batch of them.
absl::Status CheckSlots(const char* what, std::span<const int32_t> slots, const HrrConfig& config);
// `n` entries of `what`, as many as `expected`.
absl::Status CheckCount(const char* what, size_t n, size_t expected);
// Every value finite; the message names the first that is not (as vector i, element j of `dim`).
absl::Status CheckFinite(const char* what, std::span<const float> values, int dim);
// Every value finite and within +-kMaxValue (what Put takes); the message names the first that is
// not, and the bound.
absl::Status CheckValues(const char* what, std::span<const float> values, int dim);
// Every bin of `spectra` (vectors of `bins` bins, numbered from `first`) has parts within
// +-kMaxBin, NaN and Inf failing: what PutSpectra takes, and what the Memory service checks of
// every result before it keeps it. The message reads "<what> <i>, bin <k> = (re, im) is ...".
absl::Status CheckBins(const char* what, std::span<const Cf> spectra, int bins, size_t first = 0);
// Superpose's groups: offsets ascend from 0 to n_terms, one more than the outputs.
absl::Status CheckOffsets(std::span<const int32_t> offsets, size_t n_out, size_t n_terms);
absl::Status CheckCleanup(int item_begin, int item_count, int k, size_t n_queries, size_t n_slots,
                          size_t n_cosines, const HrrConfig& config);

// The common checks of a unary or binary element-wise call: out, a (and b) slot lists of one length.
absl::Status CheckUnary(std::span<const int32_t> out, std::span<const int32_t> a, const HrrConfig& config);
absl::Status CheckBinary(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> b,
                         const HrrConfig& config);

// One check per HrrSpace call, in the order the backends apply them, so that both refuse exactly
// the same calls with the same words.
absl::Status CheckPut(std::span<const int32_t> slots, std::span<const float> values, const HrrConfig& config);
absl::Status CheckGet(std::span<const int32_t> slots, size_t n_values, const HrrConfig& config);
absl::Status CheckPutSpectra(std::span<const int32_t> slots, std::span<const Cf> spectra, const HrrConfig& config);
absl::Status CheckGetSpectra(std::span<const int32_t> slots, size_t n_spectra, const HrrConfig& config);
absl::Status CheckRandom(std::span<const int32_t> slots, size_t n_ids, const HrrConfig& config);
absl::Status CheckPermute(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> shifts,
                          const HrrConfig& config);
absl::Status CheckPower(std::span<const int32_t> out, std::span<const int32_t> base, std::span<const float> exponents,
                        const HrrConfig& config);
absl::Status CheckSuperpose(std::span<const int32_t> out, std::span<const int32_t> offsets,
                            std::span<const int32_t> terms, std::span<const float> weights, const HrrConfig& config);
absl::Status CheckSimilarity(std::span<const int32_t> a, std::span<const int32_t> b, size_t n_cosines,
                             const HrrConfig& config);
absl::Status CheckCleanupCall(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                              size_t n_slots, size_t n_cosines, const HrrConfig& config);

}  // namespace fieldbrain::hrr
