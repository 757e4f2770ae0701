#include "server/stream_phase.h"

namespace fieldbrain::server {

StreamPhase NextPhase(StreamPhase phase, StreamEvent event) {
  using P = StreamPhase;
  switch (event) {
    case StreamEvent::kHelloRead:
      return phase == P::kAwaitingHello ? P::kAdmitting : phase;
    case StreamEvent::kGrantedKeptBrain:
      return phase == P::kAdmitting ? P::kRunning : phase;
    case StreamEvent::kGrantedBrainToMake:
      return phase == P::kAdmitting ? P::kCreating : phase;
    case StreamEvent::kBrainMade:
      return phase == P::kCreating ? P::kRunning : phase;
    case StreamEvent::kEndRequested:
      switch (phase) {
        case P::kAwaitingHello:
        case P::kAdmitting:
        case P::kCreating:
        case P::kRunning: return P::kEnding;
        case P::kEnding:
        case P::kFinished: return phase;
      }
      break;
    case StreamEvent::kFinishCalled:
      return phase == P::kEnding ? P::kFinished : phase;
  }
  return phase;  // not reached: every event is named above
}

const char* StreamPhaseName(StreamPhase phase) {
  switch (phase) {
    case StreamPhase::kAwaitingHello: return "awaiting Hello";
    case StreamPhase::kAdmitting: return "admitting";
    case StreamPhase::kCreating: return "creating";
    case StreamPhase::kRunning: return "running";
    case StreamPhase::kEnding: return "ending";
    case StreamPhase::kFinished: return "finished";
  }
  return "unknown";
}

bool ReadsIn(StreamPhase phase) {
  switch (phase) {
    case StreamPhase::kAwaitingHello:
    case StreamPhase::kRunning: return true;
    case StreamPhase::kAdmitting:  // the Hello is still being decided on
    case StreamPhase::kCreating:   // no frame before the Welcome
    case StreamPhase::kEnding:
    case StreamPhase::kFinished: return false;
  }
  return false;
}

bool EndingOrOver(StreamPhase phase) {
  switch (phase) {
    case StreamPhase::kEnding:
    case StreamPhase::kFinished: return true;
    case StreamPhase::kAwaitingHello:
    case StreamPhase::kAdmitting:
    case StreamPhase::kCreating:
    case StreamPhase::kRunning: return false;
  }
  return false;
}

}  // namespace fieldbrain::server
