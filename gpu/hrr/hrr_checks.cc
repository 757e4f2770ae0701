#include "gpu/hrr/hrr_checks.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace fieldbrain::hrr {

absl::Status CheckConfig(const HrrConfig& c) {
  if (c.dim < 2 || c.dim > kMaxDim || c.dim % 2 != 0)
    return absl::InvalidArgumentError(absl::StrCat("dimension ", c.dim, " must be even and in 2..", kMaxDim));
  if (c.capacity < 1) return absl::InvalidArgumentError(absl::StrCat("capacity ", c.capacity, " must be at least 1"));
  if (c.max_batch < 1) return absl::InvalidArgumentError(absl::StrCat("max_batch ", c.max_batch, " must be at least 1"));
  return absl::OkStatus();
}

absl::Status CheckStorage(const HrrStorage& storage, const HrrConfig& config) {
  if (storage.data == nullptr) return absl::OkStatus();
  if (storage.bytes < StorageBytes(config))
    return absl::InvalidArgumentError(absl::StrCat("storage of ", storage.bytes, " bytes; the space needs ",
                                                   StorageBytes(config)));
  if (reinterpret_cast<uintptr_t>(storage.data) % 256 != 0)
    return absl::InvalidArgumentError("storage must be 256-byte aligned");
  return absl::OkStatus();
}

absl::Status CheckSlots(const char* what, std::span<const int32_t> slots, const HrrConfig& config) {
  if (slots.size() > size_t(config.max_batch))
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", slots.size(), " entries; a call takes at most ", config.max_batch));
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] < 0 || slots[i] >= config.capacity)
      return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] = ", slots[i], " is not a slot (0..",
                                                     config.capacity - 1, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckCount(const char* what, size_t n, size_t expected) {
  if (n == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " has ", n, " entries; expected ", expected));
}

absl::Status CheckFinite(const char* what, std::span<const float> values, int dim) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]))
      return absl::InvalidArgumentError(absl::StrCat(what, ": vector ", i / size_t(dim), ", element ", i % size_t(dim),
                                                     " is not finite (", values[i], ")"));
  }
  return absl::OkStatus();
}

namespace {

// A bound as a message states it: "4294967296 (2^32)".
std::string Bound(float b) { return absl::StrCat(std::llround(b), " (2^", std::ilogb(b), ")"); }

}  // namespace

absl::Status CheckValues(const char* what, std::span<const float> values, int dim) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::fabs(values[i]) <= kMaxValue) continue;  // NaN fails this too
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": vector ", i / size_t(dim), ", element ", i % size_t(dim),
        std::isfinite(values[i]) ? absl::StrCat(" = ", values[i], " is beyond the bound on values, |x| <= ",
                                                Bound(kMaxValue))
                                 : absl::StrCat(" is not finite (", values[i], ")")));
  }
  return absl::OkStatus();
}

absl::Status CheckBins(const char* what, std::span<const Cf> spectra, int bins, size_t first) {
  for (size_t i = 0; i < spectra.size(); ++i) {
    const Cf c = spectra[i];
    if (std::fabs(c.re) <= kMaxBin && std::fabs(c.im) <= kMaxBin) continue;  // NaN fails this too
    const bool finite = std::isfinite(c.re) && std::isfinite(c.im);
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", first + i / size_t(bins), ", bin ", i % size_t(bins), " = (", c.re, ", ", c.im, ") is ",
        finite ? absl::StrCat("beyond the range of a stored bin, |re| and |im| <= ", Bound(kMaxBin))
               : "not finite"));
  }
  return absl::OkStatus();
}

absl::Status CheckOffsets(std::span<const int32_t> offsets, size_t n_out, size_t n_terms) {
  if (absl::Status s = CheckCount("offsets", offsets.size(), n_out + 1); !s.ok()) return s;
  if (offsets[0] != 0) return absl::InvalidArgumentError(absl::StrCat("offsets[0] = ", offsets[0], "; must be 0"));
  for (size_t g = 0; g < n_out; ++g) {
    if (offsets[g + 1] < offsets[g])
      return absl::InvalidArgumentError(
          absl::StrCat("offsets[", g + 1, "] = ", offsets[g + 1], " is below offsets[", g, "] = ", offsets[g]));
  }
  if (size_t(offsets[n_out]) != n_terms)
    return absl::InvalidArgumentError(
        absl::StrCat("offsets[", n_out, "] = ", offsets[n_out], "; must equal the number of terms, ", n_terms));
  return absl::OkStatus();
}

absl::Status CheckCleanup(int item_begin, int item_count, int k, size_t n_queries, size_t n_slots, size_t n_cosines,
                          const HrrConfig& config) {
  if (item_begin < 0 || item_count < 0 || int64_t(item_begin) + item_count > config.capacity)
    return absl::InvalidArgumentError(absl::StrCat("items [", item_begin, ", ", int64_t(item_begin) + item_count,
                                                   ") are not within the space's ", config.capacity, " slots"));
  if (k < 1 || k > kMaxTopK)
    return absl::InvalidArgumentError(absl::StrCat("k = ", k, " must be in 1..", kMaxTopK));
  if (absl::Status s = CheckCount("top_slots", n_slots, n_queries * size_t(k)); !s.ok()) return s;
  return CheckCount("top_cosines", n_cosines, n_queries * size_t(k));
}

absl::Status CheckUnary(std::span<const int32_t> out, std::span<const int32_t> a, const HrrConfig& config) {
  if (absl::Status s = CheckSlots("out", out, config); !s.ok()) return s;
  if (absl::Status s = CheckSlots("a", a, config); !s.ok()) return s;
  return CheckCount("a", a.size(), out.size());
}

absl::Status CheckBinary(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> b,
                         const HrrConfig& config) {
  if (absl::Status s = CheckUnary(out, a, config); !s.ok()) return s;
  if (absl::Status s = CheckSlots("b", b, config); !s.ok()) return s;
  return CheckCount("b", b.size(), out.size());
}

#define FB_HRR_CHECK(expr)                 \
  do {                                     \
    if (absl::Status s = (expr); !s.ok()) \
      return s;                            \
  } while (0)

absl::Status CheckPut(std::span<const int32_t> slots, std::span<const float> values, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("slots", slots, config));
  FB_HRR_CHECK(CheckCount("values", values.size(), slots.size() * size_t(config.dim)));
  return CheckValues("values", values, config.dim);
}

absl::Status CheckGet(std::span<const int32_t> slots, size_t n_values, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("slots", slots, config));
  return CheckCount("values", n_values, slots.size() * size_t(config.dim));
}

absl::Status CheckPutSpectra(std::span<const int32_t> slots, std::span<const Cf> spectra, const HrrConfig& config) {
  const int bins = Bins(config.dim);
  FB_HRR_CHECK(CheckSlots("slots", slots, config));
  FB_HRR_CHECK(CheckCount("spectra", spectra.size(), slots.size() * size_t(bins)));
  return CheckBins("spectra: vector", spectra, bins);
}

absl::Status CheckGetSpectra(std::span<const int32_t> slots, size_t n_spectra, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("slots", slots, config));
  return CheckCount("spectra", n_spectra, slots.size() * size_t(Bins(config.dim)));
}

absl::Status CheckRandom(std::span<const int32_t> slots, size_t n_ids, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("slots", slots, config));
  return CheckCount("ids", n_ids, slots.size());
}

absl::Status CheckPermute(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> shifts,
                          const HrrConfig& config) {
  FB_HRR_CHECK(CheckUnary(out, a, config));
  return CheckCount("shifts", shifts.size(), out.size());
}

absl::Status CheckPower(std::span<const int32_t> out, std::span<const int32_t> base, std::span<const float> exponents,
                        const HrrConfig& config) {
  FB_HRR_CHECK(CheckUnary(out, base, config));
  FB_HRR_CHECK(CheckCount("exponents", exponents.size(), out.size()));
  return CheckFinite("exponents", exponents, 1);
}

absl::Status CheckSuperpose(std::span<const int32_t> out, std::span<const int32_t> offsets,
                            std::span<const int32_t> terms, std::span<const float> weights, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("out", out, config));
  FB_HRR_CHECK(CheckSlots("terms", terms, config));
  FB_HRR_CHECK(CheckOffsets(offsets, out.size(), terms.size()));
  if (weights.empty()) return absl::OkStatus();
  FB_HRR_CHECK(CheckCount("weights", weights.size(), terms.size()));
  return CheckFinite("weights", weights, 1);
}

absl::Status CheckSimilarity(std::span<const int32_t> a, std::span<const int32_t> b, size_t n_cosines,
                             const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("a", a, config));
  FB_HRR_CHECK(CheckSlots("b", b, config));
  FB_HRR_CHECK(CheckCount("b", b.size(), a.size()));
  return CheckCount("cosines", n_cosines, a.size());
}

absl::Status CheckCleanupCall(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                              size_t n_slots, size_t n_cosines, const HrrConfig& config) {
  FB_HRR_CHECK(CheckSlots("queries", queries, config));
  return CheckCleanup(item_begin, item_count, k, queries.size(), n_slots, n_cosines, config);
}

#undef FB_HRR_CHECK

}  // namespace fieldbrain::hrr
