// StreamPhase: the life of one Cycle stream (CycleStream), as one transition function.
//
//   awaiting Hello --Hello read--> admitting --kept brain granted--> running
//                                      |
//                                      +--brain to make--> creating --brain made--> running
//   any of those --end requested--> ending (writes what is owed) --Finish called--> finished
//
// An event that does not apply to a phase leaves it: an admission or a creation that comes back
// after the stream began to end does not bring it back to life.
#pragma once

namespace fieldbrain::server {

enum class StreamPhase { kAwaitingHello, kAdmitting, kCreating, kRunning, kEnding, kFinished };
enum class StreamEvent {
  kHelloRead,          // the first message was read (a Hello, or the stream ends over it)
  kGrantedKeptBrain,   // admission gave it a brain that already is in a slot
  kGrantedBrainToMake, // admission reserved a brain the engine thread makes (new or restored)
  kBrainMade,          // the engine thread made it
  kEndRequested,       // an error, a cancel, the robot's half-close, a shutdown, an expiry
  kFinishCalled,       // every owed answer written (or dropped): the call is finished
};

StreamPhase NextPhase(StreamPhase phase, StreamEvent event);
const char* StreamPhaseName(StreamPhase phase);

// Whether the stream may arm a read in `phase` (a Hello, or frames while running).
bool ReadsIn(StreamPhase phase);
// Whether the stream is ending or over (no new work is taken).
bool EndingOrOver(StreamPhase phase);

}  // namespace fieldbrain::server
