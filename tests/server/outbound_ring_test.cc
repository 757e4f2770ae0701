// OutboundRing: answers leave in the order they were queued, one write in flight at a time, in a
// ring of fixed entries that a full ring refuses to overfill.
#include "server/outbound_ring.h"

#include "brain/v1/brain.grpc.pb.h"
#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

uint64_t SeqOf(grpc::ByteBuffer* bytes) {
  brain::v1::CycleResponse r;
  EXPECT_TRUE(grpc::SerializationTraits<brain::v1::CycleResponse>::Deserialize(bytes, &r).ok());
  return r.motors().seq();
}

void Queue(OutboundRing& ring, uint64_t seq, grpc::ByteBuffer** to_write) {
  brain::v1::CycleResponse* entry = ring.Next();
  ASSERT_NE(entry, nullptr);
  entry->mutable_motors()->set_seq(seq);
  grpc::ByteBuffer* bytes = ring.Push();
  if (to_write != nullptr) *to_write = bytes;
}

TEST(OutboundRingTest, AnswersLeaveInOrderOneWriteAtATime) {
  OutboundRing ring;
  grpc::ByteBuffer* first = nullptr;
  Queue(ring, 1, &first);
  ASSERT_NE(first, nullptr) << "nothing in flight: the first answer is written at once";
  EXPECT_TRUE(ring.writing());
  grpc::ByteBuffer* second = nullptr;
  Queue(ring, 2, &second);
  EXPECT_EQ(second, nullptr) << "one write in flight: the second waits";
  Queue(ring, 3, nullptr);
  EXPECT_EQ(ring.queued(), 3);
  EXPECT_EQ(SeqOf(first), 1u);
  grpc::ByteBuffer* next = ring.WriteDone(true);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(SeqOf(next), 2u);
  next = ring.WriteDone(true);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(SeqOf(next), 3u);
  EXPECT_EQ(ring.WriteDone(true), nullptr);
  EXPECT_FALSE(ring.writing());
  EXPECT_EQ(ring.queued(), 0);
}

TEST(OutboundRingTest, AFullRingRefusesAndDroppingKeepsTheWriteInFlight) {
  OutboundRing ring;
  grpc::ByteBuffer* in_flight = nullptr;
  Queue(ring, 10, &in_flight);
  for (int i = 1; i < OutboundRing::kCapacity; ++i) Queue(ring, uint64_t(10 + i), nullptr);
  EXPECT_EQ(ring.Next(), nullptr) << "every entry is queued";
  ring.DropQueued();
  EXPECT_EQ(ring.queued(), 1) << "the entry being written stays until its write is done";
  EXPECT_EQ(SeqOf(in_flight), 10u);
  EXPECT_EQ(ring.WriteDone(false), nullptr) << "a broken stream writes nothing more";
  EXPECT_EQ(ring.queued(), 0);
  grpc::ByteBuffer* again = nullptr;
  Queue(ring, 99, &again);  // the ring goes on from where it was
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(SeqOf(again), 99u);
}

}  // namespace
}  // namespace fieldbrain::server
