#include "server/memory/request_checks.h"

#include <cmath>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gpu/hrr/hrr_space.h"
#include "server/memory/space_name.h"

namespace fieldbrain::server::memory {
namespace {

using google::protobuf::RepeatedField;

// 1..max_request_vectors entries of `what` (a list of ids or vectors).
absl::Status CheckCount(absl::string_view what, int n, const RequestLimits& limits) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat(what, " is empty; give at least one"));
  if (n > limits.max_request_vectors) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", n, " entries; a request takes at most ",
                                                   limits.max_request_vectors,
                                                   " (--memory_max_request_vectors): split it"));
  }
  return absl::OkStatus();
}

// `b` pairs up with `a`, so has as many entries.
absl::Status CheckSameCount(absl::string_view a, int na, absl::string_view b, int nb) {
  if (na == nb) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(b, " has ", nb, " entries and ", a, " has ", na, ": they pair up, so give as many"));
}

absl::Status CheckFinite(absl::string_view what, const RepeatedField<float>& values) {
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(what, "[", i, "] is not finite (", values[i], ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPairs(absl::string_view space, absl::string_view a, const RepeatedField<uint64_t>& ids_a,
                        absl::string_view b, const RepeatedField<uint64_t>& ids_b, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(space); !s.ok()) return s;
  if (absl::Status s = CheckCount(a, ids_a.size(), limits); !s.ok()) return s;
  return CheckSameCount(a, ids_a.size(), b, ids_b.size());
}

}  // namespace

absl::Status Check(const brain::v1::CreateSpaceRequest& r, const RequestLimits&) {
  if (absl::Status s = CheckSpaceName(r.name()); !s.ok()) return s;
  if (r.dimension() < 2 || r.dimension() > uint32_t(kMaxSpaceDimension) || r.dimension() % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimension ", r.dimension(), " must be even and in 2..", kMaxSpaceDimension));
  }
  if (r.capacity() < 1 || r.capacity() > uint32_t(kMaxSpaceCapacity)) {
    return absl::InvalidArgumentError(absl::StrCat("capacity ", r.capacity(), " must be in 1..", kMaxSpaceCapacity));
  }
  return absl::OkStatus();
}

absl::Status Check(const brain::v1::DeleteSpaceRequest& r, const RequestLimits&) { return CheckSpaceName(r.name()); }

absl::Status Check(const brain::v1::ListSpacesRequest&, const RequestLimits&) { return absl::OkStatus(); }

absl::Status Check(const brain::v1::PutRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  switch (r.source_case()) {
    case brain::v1::PutRequest::kValues: {
      const auto& vectors = r.values().vectors();
      if (absl::Status s = CheckCount("values.vectors", vectors.size(), limits); !s.ok()) return s;
      // Bounded, not merely finite: the server keeps a vector's spectrum, whose bins sum up to D
      // values (gpu/hrr/hrr_space.h, kMaxValue).
      for (int i = 0; i < vectors.size(); ++i) {
        const RepeatedField<float>& v = vectors[i].values();
        for (int j = 0; j < v.size(); ++j) {
          if (!std::isfinite(v[j])) {
            return absl::InvalidArgumentError(
                absl::StrCat("values.vectors[", i, "], element ", j, " is not finite (", v[j], ")"));
          }
          if (std::fabs(v[j]) > hrr::kMaxValue) {
            return absl::InvalidArgumentError(absl::StrCat("values.vectors[", i, "], element ", j, " = ", v[j],
                                                           " is beyond the bound on values, |x| <= ",
                                                           int64_t(hrr::kMaxValue), " (2^", std::ilogb(hrr::kMaxValue),
                                                           ")"));
          }
        }
      }
      return absl::OkStatus();
    }
    case brain::v1::PutRequest::kRandom: {
      const brain::v1::RandomVectors& random = r.random();
      if (random.kind() != brain::v1::VECTOR_KIND_GAUSSIAN && random.kind() != brain::v1::VECTOR_KIND_UNITARY) {
        return absl::InvalidArgumentError(
            absl::StrCat("random.kind ", int(random.kind()), " is not VECTOR_KIND_GAUSSIAN or VECTOR_KIND_UNITARY"));
      }
      if (random.count() < 1 || random.count() > uint32_t(limits.max_request_vectors)) {
        return absl::InvalidArgumentError(absl::StrCat("random.count = ", random.count(), " must be in 1..",
                                                       limits.max_request_vectors, " (--memory_max_request_vectors)"));
      }
      return absl::OkStatus();
    }
    case brain::v1::PutRequest::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("a Put needs values or random");
  }
  return absl::InvalidArgumentError("a Put needs values or random");
}

absl::Status Check(const brain::v1::GetRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  return CheckCount("ids", r.ids_size(), limits);
}

absl::Status Check(const brain::v1::DeleteRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  if (absl::Status s = CheckCount("ids", r.ids_size(), limits); !s.ok()) return s;
  absl::flat_hash_map<uint64_t, int> seen;
  seen.reserve(size_t(r.ids_size()));
  for (int i = 0; i < r.ids_size(); ++i) {
    const auto [it, fresh] = seen.emplace(r.ids(i), i);
    if (!fresh) {
      return absl::InvalidArgumentError(
          absl::StrCat("ids[", i, "] = ", r.ids(i), " repeats ids[", it->second, "]: name each vector once"));
    }
  }
  return absl::OkStatus();
}

absl::Status Check(const brain::v1::BindRequest& r, const RequestLimits& limits) {
  return CheckPairs(r.space(), "a", r.a(), "b", r.b(), limits);
}

absl::Status Check(const brain::v1::UnbindRequest& r, const RequestLimits& limits) {
  return CheckPairs(r.space(), "c", r.c(), "key", r.key(), limits);
}

absl::Status Check(const brain::v1::SuperposeRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  if (absl::Status s = CheckCount("groups", r.groups_size(), limits); !s.ok()) return s;
  int64_t terms = 0;
  for (int g = 0; g < r.groups_size(); ++g) {
    const brain::v1::SuperposeGroup& group = r.groups(g);
    const std::string what = absl::StrCat("groups[", g, "]");
    if (group.ids_size() == 0) return absl::InvalidArgumentError(absl::StrCat(what, ".ids is empty"));
    if (group.weights_size() != 0) {
      if (absl::Status s = CheckSameCount(what + ".ids", group.ids_size(), what + ".weights", group.weights_size());
          !s.ok()) {
        return s;
      }
      if (absl::Status s = CheckFinite(what + ".weights", group.weights()); !s.ok()) return s;
    }
    terms += group.ids_size();
  }
  if (terms > limits.max_request_vectors) {
    return absl::InvalidArgumentError(absl::StrCat("the groups have ", terms, " ids in all; a request takes at most ",
                                                   limits.max_request_vectors,
                                                   " (--memory_max_request_vectors): split it"));
  }
  return absl::OkStatus();
}

absl::Status Check(const brain::v1::PermuteRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  if (absl::Status s = CheckCount("ids", r.ids_size(), limits); !s.ok()) return s;
  return CheckSameCount("ids", r.ids_size(), "shifts", r.shifts_size());
}

absl::Status Check(const brain::v1::PowerRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  if (absl::Status s = CheckCount("ids", r.ids_size(), limits); !s.ok()) return s;
  if (absl::Status s = CheckSameCount("ids", r.ids_size(), "exponents", r.exponents_size()); !s.ok()) return s;
  return CheckFinite("exponents", r.exponents());
}

absl::Status Check(const brain::v1::SimilarityRequest& r, const RequestLimits& limits) {
  return CheckPairs(r.space(), "a", r.a(), "b", r.b(), limits);
}

absl::Status Check(const brain::v1::CleanupRequest& r, const RequestLimits& limits) {
  if (absl::Status s = CheckSpaceName(r.space()); !s.ok()) return s;
  if (absl::Status s = CheckCount("queries", r.queries_size(), limits); !s.ok()) return s;
  if (r.k() < 1 || r.k() > uint32_t(kMaxCleanupK)) {
    return absl::InvalidArgumentError(absl::StrCat("k = ", r.k(), " must be in 1..", kMaxCleanupK));
  }
  const int64_t comparisons = int64_t(r.queries_size()) * r.candidates_size();
  if (comparisons > limits.max_cleanup_comparisons()) {
    return absl::InvalidArgumentError(absl::StrCat(
        r.queries_size(), " queries x ", r.candidates_size(), " candidates = ", comparisons,
        " comparisons; a Cleanup makes at most ", limits.max_cleanup_comparisons(), ": send fewer queries"));
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain::server::memory
