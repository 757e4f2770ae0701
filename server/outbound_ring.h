// OutboundRing: the answers a Cycle stream owes its robot, in order, in a fixed ring of reusable
// CycleResponse messages (refilling an entry allocates nothing) and their serialised bytes. gRPC
// allows one write in flight per stream: the ring says which bytes to write next and when. Not
// thread-safe: the stream calls it under its own lock.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>

#include "brain/v1/brain.pb.h"

namespace fieldbrain::server {

class OutboundRing {
 public:
  static constexpr int kCapacity = 8;

  // The entry to fill next, or nullptr when every entry is queued.
  brain::v1::CycleResponse* Next();
  // Queues the entry Next returned. When no write is in flight, that entry's bytes, which the
  // caller now writes; otherwise nullptr (it goes after the ones before it).
  grpc::ByteBuffer* Push();
  // The write in flight is done. With `write_next`, the next entry's bytes to write (nullptr
  // when none is queued); without, nothing more is written (a broken stream).
  grpc::ByteBuffer* WriteDone(bool write_next);
  // Forgets every queued entry but the one being written, which must stay until WriteDone.
  void DropQueued();

  int queued() const { return count_; }  // including the one being written
  bool writing() const { return writing_; }

 private:
  grpc::ByteBuffer* SerializeHead();

  std::array<brain::v1::CycleResponse, kCapacity> entries_;
  std::array<grpc::ByteBuffer, kCapacity> wire_;  // entries_[i] serialised for writing
  int head_ = 0;                                  // the entry being written when writing_
  int count_ = 0;
  bool writing_ = false;
};

}  // namespace fieldbrain::server
