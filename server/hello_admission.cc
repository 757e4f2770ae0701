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
  if (!deps.directory->Knows(robot_id)) {
    // A brain just released may still be on its way to disk (its final copy waiting for a buffer,
    // or queued at the writer): the file is the newest copy only once it has landed.
    if (!hello.fresh() && !deps.directory->AwaitSettled(robot_id, kAwaitSavedTimeout)) {
      return absl::UnavailableError(absl::StrCat("the brain of robot_id \"", robot_id,
                                                 "\" is still being saved from its last session; retry shortly"));
    }
    return deps.checkpointer->reader().ForHello(hello);
  }
  // Daemons behind one proxy share the checkpoints, so a kept copy may be behind the robot's file:
  // the robot ran on another daemon since (a higher cycle), or started afresh there (the Hello's
  // token is the file's, not the copy's). An expired copy, not yet reaped, gives way to a file that
  // holds at least as much.
  const std::optional<BrainDirectory::KeptBrain> kept = deps.directory->Kept(robot_id, hello.resume_token(), absl::Now());
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
  // The kept copy gives way: its slot is released without a final copy, and a periodic copy not
  // yet written is dropped.
  const bool dropped = deps.directory->DropKept(robot_id);
  if (!dropped && deps.directory->Knows(robot_id)) return std::nullopt;  // it was resumed meanwhile
  deps.checkpointer->Forget(robot_id);
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
  absl::StatusOr<SessionGrant> grant;
  if (a.restore.has_value()) {
    grant = deps.directory->AttachRestored(hello, stream, a.restore->seed, a.restore->generation);
  } else {
    // A new brain's generation goes above its file's too (another daemon's brain of the robot).
    std::optional<CheckpointHead> head;
    if (deps.checkpointer != nullptr) head = deps.checkpointer->reader().HeadOnDisk(robot_id);
    grant = deps.directory->Attach(hello, stream, absl::Now(), head.has_value() ? head->generation : 0);
  }
  if (!grant.ok()) return grant.status();
  a.grant = *std::move(grant);
  // A fresh brain replaces the old one: its checkpoint goes too. The new brain's generation,
  // granted above, already leaves every copy of the old one unwritten.
  if (deps.checkpointer != nullptr && hello.fresh()) deps.checkpointer->Discard(robot_id);
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
