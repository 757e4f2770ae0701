// CycleStream: the reactor of one Cycle stream (gRPC callback API).
//
// Hello first: the profile is checked, the BrainDirectory grants a kept brain or a reservation, a
// new brain is created on the engine thread, and a Welcome goes back. Then every SensorFrame is
// validated here (bad ones are answered at once with zero motors) and good ones are submitted to
// the BatchScheduler, whose answers come back through Deliver (FrameSink).
//
// Phases (server/stream_phase.h): awaiting Hello, admitting, creating, running, ending, finished,
// changed only through AdvanceLocked. Beside the phase, a few flags say what is in flight right
// now (a read armed, a handler running, answers dropped).
//
// Writes: gRPC allows one outstanding write, so answers wait in a fixed ring of reusable
// CycleResponse messages (server/outbound_ring.h). A new read is armed only while the ring has room for every answer
// still owed, so a client that stops reading stops being read (backpressure) instead of growing
// a queue.
//
// Lifetime: the reactor deletes itself once gRPC is done with it (OnDone) AND the scheduler owes
// it nothing (every submitted frame and the brain creation have called back) AND no admission or
// registry walk holds it. Those holds are counted under its mutex; callbacks carry theirs as a
// Hold value, which releases it when the callback goes. gRPC reactions never run inline inside
// StartRead/StartWrite/Finish, so those are called with the mutex held.
//
// Lock order: registry -> stream -> brain directory -> scheduler inbox. The scheduler calls
// Deliver and creation callbacks with no lock held; the stream calls the scheduler only
// without its own lock (a superseded answer comes back inline).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "brain/v1/brain.grpc.pb.h"
#include "server/brain_directory.h"
#include "server/checkpoint/checkpointer.h"
#include "server/hello_admission.h"
#include "server/outbound_ring.h"
#include "server/frame_sink.h"
#include "server/stream_phase.h"

namespace fieldbrain::server {

class BrainService;

// The stream is read and written as raw bytes and parsed here, so that a message that is not a
// CycleRequest ends the stream with INVALID_ARGUMENT, as the proto says (gRPC's own parsing would
// only report a failed read, indistinguishable from the robot closing its side).
class CycleStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public FrameSink {
 public:
  // `authorization`: the call's "authorization" metadata, checked at the Hello (access_control.h).
  // `robot_id_header`: its "x-robot-id", which a proxy routed it by; when present, the Hello's
  // robot_id must be the same.
  CycleStream(BrainService* service, StreamId id, std::string authorization,
              std::optional<std::string> robot_id_header);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // FrameSink: the scheduler's answer to one submitted frame.
  void Deliver(const FrameAnswer& answer) override;

  // Server shutdown: stop reading, write what is owed, end with UNAVAILABLE.
  void BeginShutdown();
  // Stop reading, write what is owed, end with `status` (the engine failed).
  void EndWith(const grpc::Status& status);
  // After the tokens file was reloaded: a stream whose token no longer covers its robot ends
  // (UNAUTHENTICATED for a token gone from the file, PERMISSION_DENIED for one that no longer
  // names the robot).
  void RecheckAccess();

  // Ends the stream with DEADLINE_EXCEEDED when it is silent at `now`:
  //  - open for `hello_limit` without a Hello: a connection that never says who it is must not
  //    hold server resources;
  //  - running, with a read waiting `frame_limit` (zero = never) for a frame that does not come
  //    while nothing is owed to the robot: behind a proxy the robot may be long gone while the
  //    proxy's connection is alive. The brain is kept, as after any stream end. Time the stream
  //    stops reading (backpressure), runs a frame or writes an answer does not count.
  void ExpireIfSilent(absl::Time now, absl::Duration hello_limit, absl::Duration frame_limit);

  // A hold that keeps this object alive (see the file comment), as a value: whatever is owed a
  // callback (an admission, a brain's creation, a walk over the registry) carries one, and the
  // stream may be deleted when it goes. Frames submitted to the scheduler are counted holds
  // instead (one per frame, released by its Deliver: FrameSink promises exactly one).
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
    Hold& operator=(Hold&& other) noexcept {
      std::swap(stream_, other.stream_);
      return *this;
    }
    ~Hold() {
      if (stream_ != nullptr) stream_->Release();
    }

   private:
    friend class CycleStream;
    explicit Hold(CycleStream* stream) : stream_(stream) {}
    CycleStream* stream_ = nullptr;
  };
  // A hold, unless the stream is already going (its last hold dropped).
  std::optional<Hold> TryHold();

 private:
  // The one place phase_ changes (stream_phase.h).
  void AdvanceLocked(StreamEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Hold TakeHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops one hold; deletes the object when it was the last.
  void Release();

  ~CycleStream() override = default;  // only through Release

  void HandleHello();
  // The Hello's admission (hello_admission.h), on an admission thread: the Welcome, or a brain
  // to create first, or the stream's end.
  void OnAdmitted(absl::StatusOr<Admission> admission);
  void HandleFrame(const brain::v1::SensorFrame& frame);
  void OnBrainCreated(SessionGrant grant, absl::StatusOr<int> slot);

  // Ends the stream once owed writes allow: `drop` discards answers not yet written (errors,
  // cancel); otherwise every owed answer is written first. The first reason wins, except that
  // a later drop still drops.
  void RequestFinishLocked(grpc::Status status, bool drop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A read's handler is done: arm the next read or, if the stream is ending, finish it.
  void EndHandlingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueWelcomeLocked(const SessionGrant& grant, uint64_t cycle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueAnswerLocked(const FrameAnswer& answer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next free ring entry; nullptr once Finish was called (nothing may be written after it)
  // or when the ring is full (reads are gated so it is not).
  brain::v1::CycleResponse* NextEntryLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the entry NextEntryLocked gave, writing it at once when no write is in flight.
  void PushEntryLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AnswerHereLocked(uint64_t seq, brain::v1::FrameStatus status, std::string_view detail,
                        Clock::time_point arrival) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  BrainService* const service_;
  const StreamId id_;
  const std::string authorization_;
  const std::optional<std::string> robot_id_header_;
  const absl::Time opened_ = absl::Now();
  // Only the read path touches request_: one read is outstanding at a time, and the next one is
  // armed only after the previous message was handled (read_busy_).
  grpc::ByteBuffer request_bytes_;
  brain::v1::CycleRequest request_;
  uint64_t requests_read_ = 0;

  absl::Mutex mu_;
  StreamPhase phase_ ABSL_GUARDED_BY(mu_) = StreamPhase::kAwaitingHello;
  int holds_ ABSL_GUARDED_BY(mu_) = 1;        // gRPC's, until OnDone
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // scheduler callbacks still owed
  bool read_busy_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time read_armed_at_ ABSL_GUARDED_BY(mu_);       // when the outstanding read was started
  absl::Time last_write_done_at_ ABSL_GUARDED_BY(mu_);  // when the last answer was written
  // A handler of the last read (Hello or frame) runs outside mu_ and may still queue an answer:
  // the stream must not Finish until it is done, or that answer would be written after Finish.
  bool handling_ ABSL_GUARDED_BY(mu_) = false;
  bool read_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool drop_answers_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
  OutboundRing outbound_ ABSL_GUARDED_BY(mu_);  // the answers owed, in order

  // Set once by the Hello, before any frame is submitted.
  std::string robot_id_ ABSL_GUARDED_BY(mu_);
  bool attached_ ABSL_GUARDED_BY(mu_) = false;
  int slot_ ABSL_GUARDED_BY(mu_) = -1;
  int sensor_count_ ABSL_GUARDED_BY(mu_) = 0;
  int motor_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fieldbrain::server
