#include "client/picarx/hardware/ultrasonic.h"

namespace fieldbrain::picarx {

absl::StatusOr<float> Ultrasonic::ReadMetres() {
  // An echo still high (the last ping's, or a line stuck high) would time a pulse that is not
  // ours and read as open space: wait for it to fall, and read kNoEcho if it does not.
  const absl::Time waiting = clock_.Now();
  for (;;) {
    absl::StatusOr<bool> high = echo_.Get();
    if (!high.ok()) return high.status();
    if (!*high) break;
    if (clock_.Now() - waiting > kEchoSettleTimeout) return kNoEcho;
  }
  if (absl::Status s = trigger_.Set(false); !s.ok()) return s;
  clock_.SleepFor(absl::Milliseconds(1));
  if (absl::Status s = trigger_.Set(true); !s.ok()) return s;
  clock_.SleepFor(absl::Microseconds(10));
  if (absl::Status s = trigger_.Set(false); !s.ok()) return s;

  // Busy-waits, as the pulse is timed to microseconds; both loops are bounded by the clock.
  const absl::Time sent = clock_.Now();
  absl::Time rise;
  for (;;) {
    absl::StatusOr<bool> high = echo_.Get();
    if (!high.ok()) return high.status();
    rise = clock_.Now();
    if (*high) break;
    if (rise - sent > kEchoRiseTimeout) return kNoEcho;
  }
  const absl::Duration longest = absl::Seconds(2.0 * kMaxRangeM / kSoundSpeedMps);
  for (;;) {
    absl::StatusOr<bool> high = echo_.Get();
    if (!high.ok()) return high.status();
    const absl::Duration width = clock_.Now() - rise;
    if (!*high) return float(absl::ToDoubleSeconds(width) * kSoundSpeedMps / 2.0);
    if (width > longest) return float(kMaxRangeM);
  }
}

}  // namespace fieldbrain::picarx
