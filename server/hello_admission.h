// HelloAdmission: the step between a Hello that passed its cheap checks (profile, token, x-robot-id:
// on the gRPC thread) and the brain it gets. It decides which brain that is (a kept one, one from
// its checkpoint, or a new one of a new generation) with the brain directory and the checkpointer,
// which may mean reading and hashing a checkpoint of up to 9 MiB or waiting for a just-released
// brain to reach disk: so it runs on threads of its own, never on gRPC's callback threads, which
// every live stream needs. A wave of robots failing over onto a shared volume then delays only
// their own Hellos.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.pb.h"
#include "server/service_deps.h"

namespace fieldbrain::server {

// What a Hello was admitted to: its session (with its brain's generation, checkpoint_format.h),
// and for a brain still to be made, the checkpoint it is restored from (if any).
struct Admission {
  SessionGrant grant;
  std::optional<RestorableBrain> restore;
};

// The admission itself: the brain directory and the checkpointer decide. Any thread; blocks on
// disk. Fails with the status the stream ends with (FAILED_PRECONDITION for a brain the Hello
// may not take, ALREADY_EXISTS, RESOURCE_EXHAUSTED, UNAVAILABLE while the robot's last brain is
// still being saved).
absl::StatusOr<Admission> AdmitHello(const ServiceDeps& deps, const brain::v1::Hello& hello, StreamId stream);

class HelloAdmission {
 public:
  using Done = absl::AnyInvocable<void(absl::StatusOr<Admission>) &&>;

  explicit HelloAdmission(int threads);
  ~HelloAdmission();  // admits what is queued, then joins
  HelloAdmission(const HelloAdmission&) = delete;
  HelloAdmission& operator=(const HelloAdmission&) = delete;

  // AdmitHello on an admission thread, then `done` there with its result. `hello` must stay
  // valid until `done` runs.
  void Admit(const ServiceDeps& deps, const brain::v1::Hello& hello, StreamId stream, Done done);

 private:
  void Work();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace fieldbrain::server
