#include "server/outbound_ring.h"

#include "brain/v1/brain.grpc.pb.h"  // the protobuf serialization traits

namespace fieldbrain::server {

brain::v1::CycleResponse* OutboundRing::Next() {
  if (count_ >= kCapacity) return nullptr;
  return &entries_[(head_ + count_) % kCapacity];
}

grpc::ByteBuffer* OutboundRing::Push() {
  ++count_;
  if (writing_) return nullptr;
  writing_ = true;
  return SerializeHead();
}

grpc::ByteBuffer* OutboundRing::WriteDone(bool write_next) {
  writing_ = false;
  head_ = (head_ + 1) % kCapacity;
  --count_;
  if (!write_next || count_ == 0) return nullptr;
  writing_ = true;
  return SerializeHead();
}

void OutboundRing::DropQueued() { count_ = writing_ ? 1 : 0; }

grpc::ByteBuffer* OutboundRing::SerializeHead() {
  bool own_buffer = false;
  wire_[head_].Clear();  // its previous write finished before this entry came round again
  // A CycleResponse always serialises; gRPC would do the same for a typed stream.
  grpc::SerializationTraits<brain::v1::CycleResponse>::Serialize(entries_[head_], &wire_[head_], &own_buffer)
      .IgnoreError();
  return &wire_[head_];
}

}  // namespace fieldbrain::server
