#include "server/memory/memory_ops.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace fieldbrain::server::memory {
namespace {

using google::protobuf::RepeatedField;

template <typename T>
std::span<const T> View(const RepeatedField<T>& field) {
  return std::span<const T>(field.data(), size_t(field.size()));
}

void CopyIds(const std::vector<uint64_t>& ids, RepeatedField<uint64_t>* out) {
  out->Reserve(int(ids.size()));
  for (uint64_t id : ids) out->Add(id);
}

// `fn(begin, n)` over [0, total) in pieces of at most `piece`.
template <typename Fn>
absl::Status Pieces(size_t total, int piece, Fn fn) {
  for (size_t begin = 0; begin < total; begin += size_t(piece)) {
    if (absl::Status s = fn(begin, std::min(size_t(piece), total - begin)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// out[i] <- op(a[i], b[i]) for an element-wise library call of two slot lists.
template <typename Response, typename Op>
absl::Status StorePairs(MemorySpace& space, absl::string_view what_a, const RepeatedField<uint64_t>& a,
                        absl::string_view what_b, const RepeatedField<uint64_t>& b, Response* out, OpScratch& s,
                        Op op) {
  if (absl::Status st = space.Resolve(what_a, View(a), s.a); !st.ok()) return st;
  if (absl::Status st = space.Resolve(what_b, View(b), s.b); !st.ok()) return st;
  s.ids.clear();
  if (absl::Status st = space.Store(
          a.size(), [&](std::span<const int32_t> slots) { return op(slots, s.a, s.b); }, s.digest, s.ids);
      !st.ok()) {
    return st;
  }
  CopyIds(s.ids, out->mutable_ids());
  return absl::OkStatus();
}

}  // namespace

absl::Status RunPut(MemorySpace& space, const brain::v1::PutRequest& r, brain::v1::PutResponse* out, OpScratch& s) {
  s.ids.clear();
  absl::Status status;
  switch (r.source_case()) {
    case brain::v1::PutRequest::kValues: {
      const auto& vectors = r.values().vectors();
      const size_t dim = size_t(space.dim());
      s.floats.resize(size_t(vectors.size()) * dim);
      for (int i = 0; i < vectors.size(); ++i) {
        if (size_t(vectors[i].values_size()) != dim) {
          return absl::InvalidArgumentError(absl::StrCat("values.vectors[", i, "] has ", vectors[i].values_size(),
                                                         " values; space '", space.name(), "' has dimension ", dim));
        }
        std::memcpy(s.floats.data() + size_t(i) * dim, vectors[i].values().data(), dim * sizeof(float));
      }
      status = space.Store(
          vectors.size(), [&](std::span<const int32_t> slots) { return space.hrr().Put(slots, s.floats); }, s.digest,
          s.ids);
      break;
    }
    case brain::v1::PutRequest::kRandom: {
      const brain::v1::RandomVectors& random = r.random();
      const hrr::VectorKind kind =
          random.kind() == brain::v1::VECTOR_KIND_UNITARY ? hrr::VectorKind::kUnitary : hrr::VectorKind::kGaussian;
      std::vector<uint64_t> indices(random.count());
      for (uint32_t i = 0; i < random.count(); ++i) indices[i] = random.first_index() + i;
      status = space.Store(
          int(random.count()),
          [&](std::span<const int32_t> slots) { return space.hrr().Random(slots, kind, random.seed(), indices); },
          s.digest, s.ids);
      break;
    }
    case brain::v1::PutRequest::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("a Put needs values or random");
  }
  if (!status.ok()) return status;
  CopyIds(s.ids, out->mutable_ids());
  return absl::OkStatus();
}

absl::Status RunGet(MemorySpace& space, const brain::v1::GetRequest& r, brain::v1::GetResponse* out, OpScratch& s) {
  if (absl::Status st = space.Resolve("ids", View(r.ids()), s.a); !st.ok()) return st;
  const size_t dim = size_t(space.dim());
  if (s.a.size() * dim > size_t(kMaxGetValues)) {
    return absl::InvalidArgumentError(absl::StrCat(s.a.size(), " vectors of dimension ", dim, " are ", s.a.size() * dim,
                                                   " values; a Get returns at most ", kMaxGetValues,
                                                   ": ask for fewer ids"));
  }
  // Corrupt vectors are reported, never returned.
  if (absl::Status st = space.Verify(s.a, s.digest); !st.ok()) return st;
  out->mutable_vectors()->Reserve(int(s.a.size()));
  return Pieces(s.a.size(), space.max_batch(), [&](size_t begin, size_t n) {
    s.floats.resize(n * dim);
    if (absl::Status st = space.hrr().Get(std::span<const int32_t>(s.a).subspan(begin, n), s.floats); !st.ok()) {
      return st;
    }
    for (size_t i = 0; i < n; ++i) {
      RepeatedField<float>* values = out->add_vectors()->mutable_values();
      values->Resize(int(dim), 0.0f);
      std::memcpy(values->mutable_data(), s.floats.data() + i * dim, dim * sizeof(float));
    }
    return absl::OkStatus();
  });
}

absl::Status RunDelete(MemorySpace& space, const brain::v1::DeleteRequest& r, brain::v1::DeleteResponse* out,
                       OpScratch& s) {
  if (absl::Status st = space.Resolve("ids", View(r.ids()), s.a); !st.ok()) return st;
  if (absl::Status st = space.Erase(s.a); !st.ok()) return st;
  out->set_deleted(uint32_t(s.a.size()));
  return absl::OkStatus();
}

absl::Status RunBind(MemorySpace& space, const brain::v1::BindRequest& r, brain::v1::BindResponse* out, OpScratch& s) {
  return StorePairs(space, "a", r.a(), "b", r.b(), out, s,
                    [&](std::span<const int32_t> slots, std::span<const int32_t> a, std::span<const int32_t> b) {
                      return space.hrr().Bind(slots, a, b);
                    });
}

absl::Status RunUnbind(MemorySpace& space, const brain::v1::UnbindRequest& r, brain::v1::UnbindResponse* out,
                       OpScratch& s) {
  return StorePairs(space, "c", r.c(), "key", r.key(), out, s,
                    [&](std::span<const int32_t> slots, std::span<const int32_t> c, std::span<const int32_t> key) {
                      return space.hrr().Unbind(slots, c, key);
                    });
}

absl::Status RunPermute(MemorySpace& space, const brain::v1::PermuteRequest& r, brain::v1::PermuteResponse* out,
                        OpScratch& s) {
  if (absl::Status st = space.Resolve("ids", View(r.ids()), s.a); !st.ok()) return st;
  s.ids.clear();
  if (absl::Status st = space.Store(
          r.ids_size(),
          [&](std::span<const int32_t> slots) { return space.hrr().Permute(slots, s.a, View(r.shifts())); }, s.digest,
          s.ids);
      !st.ok()) {
    return st;
  }
  CopyIds(s.ids, out->mutable_ids());
  return absl::OkStatus();
}

absl::Status RunPower(MemorySpace& space, const brain::v1::PowerRequest& r, brain::v1::PowerResponse* out,
                      OpScratch& s) {
  if (absl::Status st = space.Resolve("ids", View(r.ids()), s.a); !st.ok()) return st;
  s.ids.clear();
  if (absl::Status st = space.Store(
          r.ids_size(),
          [&](std::span<const int32_t> slots) { return space.hrr().Power(slots, s.a, View(r.exponents())); }, s.digest,
          s.ids);
      !st.ok()) {
    return st;
  }
  CopyIds(s.ids, out->mutable_ids());
  return absl::OkStatus();
}

absl::Status RunSuperpose(MemorySpace& space, const brain::v1::SuperposeRequest& r, brain::v1::SuperposeResponse* out,
                          OpScratch& s) {
  // Terms naming one id are merged (their weights added): a group then has at most as many terms
  // as the space has vectors, so each group fits one library call however often ids repeat.
  s.a.clear();       // merged terms' slots, group after group
  s.floats.clear();  // their weights
  s.offsets.assign(1, 0);
  absl::flat_hash_map<int32_t, size_t> where;
  for (int g = 0; g < r.groups_size(); ++g) {
    const brain::v1::SuperposeGroup& group = r.groups(g);
    if (absl::Status st = space.Resolve(absl::StrCat("groups[", g, "].ids"), View(group.ids()), s.b); !st.ok()) {
      return st;
    }
    where.clear();
    for (int j = 0; j < group.ids_size(); ++j) {
      const float w = group.weights_size() == 0 ? 1.0f : group.weights(j);
      const auto [it, fresh] = where.emplace(s.b[size_t(j)], s.a.size());
      if (fresh) {
        s.a.push_back(s.b[size_t(j)]);
        s.floats.push_back(w);
      } else {
        s.floats[it->second] += w;
      }
    }
    s.offsets.push_back(int32_t(s.a.size()));
  }
  const auto fill = [&](std::span<const int32_t> slots) -> absl::Status {
    // Consecutive groups, as many as fit max_batch terms, per library call.
    const int max_batch = space.max_batch();
    for (size_t g = 0; g < slots.size();) {
      size_t h = g + 1;
      while (h < slots.size() && int(h - g) < max_batch && s.offsets[h + 1] - s.offsets[g] <= max_batch) ++h;
      s.c.resize(h - g + 1);
      for (size_t i = g; i <= h; ++i) s.c[i - g] = s.offsets[i] - s.offsets[g];
      const size_t first = size_t(s.offsets[g]), count = size_t(s.offsets[h] - s.offsets[g]);
      if (absl::Status st =
              space.hrr().Superpose(slots.subspan(g, h - g), s.c, std::span<const int32_t>(s.a).subspan(first, count),
                                    std::span<const float>(s.floats).subspan(first, count), r.normalize());
          !st.ok()) {
        return st;
      }
      g = h;
    }
    return absl::OkStatus();
  };
  s.ids.clear();
  if (absl::Status st = space.Store(r.groups_size(), fill, s.digest, s.ids); !st.ok()) return st;
  CopyIds(s.ids, out->mutable_ids());
  return absl::OkStatus();
}

absl::Status RunSimilarity(MemorySpace& space, const brain::v1::SimilarityRequest& r,
                           brain::v1::SimilarityResponse* out, OpScratch& s) {
  if (absl::Status st = space.Resolve("a", View(r.a()), s.a); !st.ok()) return st;
  if (absl::Status st = space.Resolve("b", View(r.b()), s.b); !st.ok()) return st;
  RepeatedField<float>* cosines = out->mutable_cosines();
  cosines->Resize(r.a_size(), 0.0f);
  const std::span<float> all(cosines->mutable_data(), size_t(r.a_size()));
  return Pieces(s.a.size(), space.max_batch(), [&](size_t begin, size_t n) {
    return space.hrr().Similarity(std::span<const int32_t>(s.a).subspan(begin, n),
                                  std::span<const int32_t>(s.b).subspan(begin, n), all.subspan(begin, n));
  });
}

absl::Status RunCleanup(MemorySpace& space, const brain::v1::CleanupRequest& r, brain::v1::CleanupResponse* out,
                        OpScratch& s, const RequestLimits& limits) {
  if (absl::Status st = space.Resolve("queries", View(r.queries()), s.a); !st.ok()) return st;
  const int k = int(r.k());
  if (r.candidates_size() == 0) {
    // The library scans the slots below scan_end(), vectors and free slots alike.
    const int64_t comparisons = int64_t(r.queries_size()) * space.scan_end();
    if (comparisons > limits.comparisons_at(space.dim())) {
      return absl::InvalidArgumentError(absl::StrCat(
          r.queries_size(), " queries x the ", space.scan_end(), " slots space '", space.name(),
          "' has filled = ", comparisons, " comparisons; a Cleanup at dimension ", space.dim(), " makes at most ",
          limits.comparisons_at(space.dim()), ": send fewer queries, or give candidates"));
    }
    // One more than k, so that dropping the query itself still leaves k.
    const int k1 = k + 1;
    return Pieces(s.a.size(), space.max_batch(), [&](size_t begin, size_t n) {
      s.top_slots.resize(n * size_t(k1));
      s.top_cosines.resize(n * size_t(k1));
      if (absl::Status st = space.hrr().Cleanup(std::span<const int32_t>(s.a).subspan(begin, n), 0, space.scan_end(),
                                                k1, s.top_slots, s.top_cosines);
          !st.ok()) {
        return st;
      }
      for (size_t q = 0; q < n; ++q) {
        brain::v1::CleanupMatches* matches = out->add_results();
        for (int i = 0; i < k1 && matches->ids_size() < k; ++i) {
          const int32_t slot = s.top_slots[q * size_t(k1) + size_t(i)];
          if (slot < 0 || slot == s.a[begin + q]) continue;
          matches->add_ids(space.IdOf(slot));
          matches->add_cosines(s.top_cosines[q * size_t(k1) + size_t(i)]);
        }
      }
      return absl::OkStatus();
    });
  }
  // Given candidates: each query's cosines with all of them, then its top k (ties: lower id).
  if (const int64_t comparisons = int64_t(r.queries_size()) * r.candidates_size();
      comparisons > limits.comparisons_at(space.dim())) {
    return absl::InvalidArgumentError(
        absl::StrCat(r.queries_size(), " queries x ", r.candidates_size(), " candidates = ", comparisons,
                     " comparisons; a Cleanup at dimension ", space.dim(), " makes at most ",
                     limits.comparisons_at(space.dim()), ": send fewer queries"));
  }
  if (absl::Status st = space.Resolve("candidates", View(r.candidates()), s.b); !st.ok()) return st;
  {
    absl::flat_hash_map<int32_t, bool> seen;  // a repeated candidate counts once
    size_t kept = 0;
    for (size_t i = 0; i < s.b.size(); ++i)
      if (seen.emplace(s.b[i], true).second) s.b[kept++] = s.b[i];
    s.b.resize(kept);
  }
  const size_t m = s.b.size();
  s.top_cosines.resize(m);
  std::vector<std::pair<float, uint64_t>> ranked;
  ranked.reserve(m);
  for (size_t q = 0; q < s.a.size(); ++q) {
    s.c.assign(std::min(m, size_t(space.max_batch())), s.a[q]);
    if (absl::Status st = Pieces(m, space.max_batch(),
                                 [&](size_t begin, size_t n) {
                                   return space.hrr().Similarity(std::span<const int32_t>(s.c).first(n),
                                                                 std::span<const int32_t>(s.b).subspan(begin, n),
                                                                 std::span<float>(s.top_cosines).subspan(begin, n));
                                 });
        !st.ok()) {
      return st;
    }
    ranked.clear();
    for (size_t i = 0; i < m; ++i)
      if (s.b[i] != s.a[q]) ranked.emplace_back(s.top_cosines[i], space.IdOf(s.b[i]));
    const size_t top = std::min(ranked.size(), size_t(k));
    std::partial_sort(
        ranked.begin(), ranked.begin() + std::ptrdiff_t(top), ranked.end(),
        [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
    brain::v1::CleanupMatches* matches = out->add_results();
    for (size_t i = 0; i < top; ++i) {
      matches->add_ids(ranked[i].second);
      matches->add_cosines(ranked[i].first);
    }
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain::server::memory
