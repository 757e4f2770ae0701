// CycleStream: one attempt at the Brain.Cycle stream, on gRPC's callback API (internal to
// BrainClient).
//
// Why the callback API and not a sync ClientReaderWriter: a sync Write can block on HTTP/2 flow
// control when the server stalls, and the stepping thread must never block past its deadline. Here
// Send() only queues: at most one write is in flight, and a frame queued behind it is replaced by a
// newer one (its Step has already given up). Reads run continuously inside the reactor, so no
// reader thread is needed either.
//
// Lifetime: the owner keeps the object alive until Sink::OnStreamDone has been called (gRPC's
// OnDone, the last reaction); after that it may be destroyed from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.grpc.pb.h"

namespace fieldbrain::client {

// Whether `s` may go out as a gRPC metadata value (non-empty printable ASCII).
bool IsPrintableAscii(std::string_view s);

class CycleStream final
    : public grpc::ClientBidiReactor<brain::v1::CycleRequest, brain::v1::CycleResponse> {
 public:
  // Receives what the stream reads. Called on gRPC threads: must not block for long.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void OnWelcome(const brain::v1::Welcome& welcome) = 0;
    virtual void OnMotors(const brain::v1::MotorFrame& frame) = 0;
    // The stream is over; called exactly once, as the last call on this stream.
    virtual void OnStreamDone(const grpc::Status& status) = 0;
  };

  explicit CycleStream(Sink* sink) : sink_(sink) {}

  // Opens the stream and writes `hello` first. Call once.
  // `bearer_token`, if not empty, goes out as the call's "authorization: Bearer" metadata.
  void Start(brain::v1::Brain::Stub* stub, brain::v1::CycleRequest hello, const std::string& bearer_token);

  // Queues `request` for writing; false once the stream is over (nothing was queued).
  bool Send(brain::v1::CycleRequest request);

  // Ends the stream (its OnStreamDone follows). Safe before Start and more than once.
  void Cancel() { context_.TryCancel(); }

 private:
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;
  // True exactly once: when reads are over and no write is in flight, so the hold that keeps
  // OnDone back while Send() may still start writes can go. The caller (a reaction) then calls
  // RemoveHold() after unlocking; OnDone cannot run before that reaction returns.
  bool TakeHoldIfIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Sink* const sink_;
  grpc::ClientContext context_;
  brain::v1::CycleResponse response_;  // owned by the one outstanding read

  absl::Mutex mu_;
  brain::v1::CycleRequest in_flight_ ABSL_GUARDED_BY(mu_);  // the write gRPC is sending
  std::optional<brain::v1::CycleRequest> queued_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_over_ ABSL_GUARDED_BY(mu_) = false;  // no more writes may start
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace fieldbrain::client
