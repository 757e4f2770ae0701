// The PiCar-X's HC-SR04 style ultrasonic ranger on two GPIO lines (trigger D2 = BCM 27, echo
// D3 = BCM 22). A reading: trigger low for 1 ms, high for 10 us, low; then time the echo pulse,
// whose width is the sound's round trip at 343.3 m/s (robot_hat/modules.py).
//
// Where we depart from SunFounder's driver, and why: it allows 20 ms for the echo to rise and
// fall together, so anything beyond about 3.4 m reads as a timeout (-1), which our obstacle reflex
// would take for a wall. Here the echo gets kEchoRiseTimeout to start; a pulse that starts and
// outlasts kMaxRangeM's round trip is open space and reads kMaxRangeM; an echo that never starts,
// or that is already high before the trigger and stays high for kEchoSettleTimeout (a line stuck
// high, which would otherwise read as open space forever), is a fault and reads kNoEcho
// (negative, so the obstacle reflex fails safe). The echo line is pulled down.
#pragma once

#include "client/picarx/hardware/devices.h"

namespace fieldbrain::picarx {

inline constexpr double kSoundSpeedMps = 343.3;
inline constexpr double kMaxRangeM = 4.0;
inline constexpr float kNoEcho = -1.0f;
inline constexpr absl::Duration kEchoRiseTimeout = absl::Milliseconds(20);
inline constexpr absl::Duration kEchoSettleTimeout = absl::Milliseconds(40);  // > a 38 ms no-target pulse

class Ultrasonic {
 public:
  Ultrasonic(GpioLine& trigger, GpioLine& echo, Clock& clock) : trigger_(trigger), echo_(echo), clock_(clock) {}
  // Metres in [0, kMaxRangeM], or kNoEcho. Errors are GPIO failures. Takes at most about
  // kEchoSettleTimeout + 1 ms + kEchoRiseTimeout + the round trip of kMaxRangeM (24 ms).
  absl::StatusOr<float> ReadMetres();

 private:
  GpioLine& trigger_;
  GpioLine& echo_;
  Clock& clock_;
};

}  // namespace fieldbrain::picarx
