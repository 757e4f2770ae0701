#include "server/hello_admission.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/log.h"

namespace fieldbrain::server {
namespace {

// How long a Hello waits for a just-released brain of its robot to reach the disk.
constexpr absl::Duration kAwaitSavedTimeout = absl::Seconds(2);

// The brain a Hello gets from disk (checkpointer.h): for a robot the table does not know (a
// restarted daemon, or a robot another daemon served), and for one whose kept brain is older than
// its checkpoint (it ran on another daemon since), which then replaces the kept one.
absl::StatusOr<std::optional<RestorableBrain>> BrainOnDisk(const ServiceDeps& deps, const brain::v1::Hello& hello) {
  if (deps.checkpointer == nullptr) return std::nullopt;
  const std::string& robot_id = hello.profile().robot_id();
  if (!deps.sessions->Knows(robot_id)) {
    // A brain just released may still be on its way to disk (its final copy waiting for a buffer,
    // or queued at the writer): the file is the newest copy only once it has landed.
    if (!hello.fresh() && !deps.checkpointer->AwaitSaved(robot_id, kAwaitSavedTimeout)) {
      return absl::UnavailableError(absl::StrCat("the brain of robot_id \"", robot_id,
                                                 "\" is still being saved from its last session; retry shortly"));
    }
    return deps.checkpointer->reader().ForHello(hello);
  }
  // Daemons behind one proxy share the checkpoints, so a kept copy may be behind the robot's file:
  // the robot ran on another daemon since (a higher cycle), or started afresh there (the Hello's
  // token is the file's, not the copy's). An expired copy, not yet reaped, gives way to a file that
  // holds at least as much.
  const std::optional<SessionTable::KeptBrain> kept = deps.sessions->Kept(robot_id, hello.resume_token(), absl::Now());
  if (!kept.has_value() || hello.fresh()) return std::nullopt;
  const uint64_t kept_cycle = deps.scheduler->brain_cycle(kept->slot);
  if (kept->token_matches) {
    const std::optional<uint64_t> on_disk = deps.checkpointer->reader().CycleOnDisk(robot_id);
    if (!on_disk.has_value() || *on_disk < kept_cycle || (*on_disk == kept_cycle && !kept->expired)) {
      return std::nullopt;
    }
  }
  absl::StatusOr<std::optional<RestorableBrain>> newer = deps.checkpointer->reader().ForHello(hello);
  // Refused or not this token's: the kept copy answers the Hello (its token check says why).
  if (!newer.ok() || !newer->has_value()) return std::nullopt;
  // The copy's release must write nothing over the newer file: unbound before the slot goes.
  const bool dropped = deps.sessions->DropKept(robot_id, [&] { deps.checkpointer->Forget(robot_id); });
  if (!dropped && deps.sessions->Knows(robot_id)) return std::nullopt;  // it was resumed meanwhile
  LogInfo("robot_id \"", robot_id, "\": its kept brain (cycle ", kept_cycle, ") gives way to its checkpoint (cycle ",
          (*newer)->snapshot->state.cycle, ")");
  return newer;
}

}  // namespace

absl::StatusOr<Admission> AdmitHello(const ServiceDeps& deps, const brain::v1::Hello& hello, StreamId stream) {
  const std::string& robot_id = hello.profile().robot_id();
  absl::StatusOr<std::optional<RestorableBrain>> found = BrainOnDisk(deps, hello);
  if (!found.ok()) return found.status();
  Admission a;
  a.restore = *std::move(found);
  absl::StatusOr<SessionGrant> grant = a.restore.has_value()
                                           ? deps.sessions->AttachRestored(hello, stream, a.restore->seed)
                                           : deps.sessions->Attach(hello, stream, absl::Now());
  if (!grant.ok()) return grant.status();
  a.grant = *std::move(grant);
  // A fresh brain replaces a kept one: its checkpoint goes too, and the robot's generation moves
  // on, so no copy of the old brain lands afterwards.
  if (deps.checkpointer != nullptr && hello.fresh()) deps.checkpointer->Discard(robot_id);
  // A resumed brain keeps its generation; a new one (first, fresh, or after an expiry) gets the
  // next.
  if (deps.checkpointer != nullptr && a.grant.needs_brain()) {
    a.generation = a.restore.has_value() ? a.restore->generation : deps.checkpointer->NewGeneration(robot_id);
  }
  return a;
}

HelloAdmission::HelloAdmission(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

HelloAdmission::~HelloAdmission() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void HelloAdmission::Admit(const ServiceDeps& deps, const brain::v1::Hello& hello, StreamId stream, Done done) {
  absl::MutexLock lock(&mu_);
  jobs_.push_back([&deps, &hello, stream, done = std::move(done)]() mutable {
    std::move(done)(AdmitHello(deps, hello, stream));
  });
}

void HelloAdmission::Work() {
  for (;;) {
    absl::AnyInvocable<void() &&> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !jobs_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (jobs_.empty()) return;  // stopping, and every Hello queued is admitted
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::move(job)();
  }
}

}  // namespace fieldbrain::server
