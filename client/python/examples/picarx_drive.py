#!/usr/bin/env python3
"""Drives a SunFounder PiCar-X with a fieldbrain brain server.

Runs on the car's Raspberry Pi with SunFounder's `picarx` library (and its `robot_hat`) installed.
Every tick it reads the hardware, maps it onto the 12 normalised sensors of the C++ PiCar-X
adapter (client/picarx/picarx_adapter.h), asks the brain for the 4 motors, applies the same
reflexes as the adapter and drives. Ctrl-C (SIGINT) or SIGTERM stops the car and exits.

  client/python/generate_stubs.sh                      # once, on the Pi
  PYTHONPATH=client/python python3 client/python/examples/picarx_drive.py \\
      --target=BRAIN_HOST:50051 --robot_id=car-1

Sensors (each mapped linearly onto [-1, 1] from its hardware range, then clamped):
  0 ultrasonic    0..4 m          px.get_distance() (cm); a lost echo (negative) reads -1
  1-3 grayscale   ADC 0..4095     px.get_grayscale_data(), left, middle, right
  4 battery       6.0..8.4 V      robot_hat.utils.get_battery_voltage(), or --battery_v
  5 steering      -30..30 deg     the last commanded angle (the servo has no feedback)
  6 pan           -90..90 deg     the last commanded angle
  7 tilt          -35..65 deg     the last commanded angle
  8-9 left/right  -100..100       the last commanded wheel power (no encoders)
  10 line         false -1, true 1   px.get_line_status(): any channel on the line
  11 cliff        false -1, true 1   px.get_cliff_status(); unreadable floor sensors count as one
An unreadable or impossible reading is replaced (ultrasonic -1, as if an obstacle were near; any
other 0) and counted in the per-second line.

Motors [drive, steer, pan, tilt] in [-1, 1]: wheel power +-50 %, steering +-25 deg, pan +-45 deg,
tilt +-30 deg. Reflexes, in this order: a safe stop (no usable answer in time: every motor 0, so
the car stops and the servos centre); battery below 6.4 V or unreadable: no drive; ultrasonic
under 2 cm or unreadable: no forward drive (reversing away stays allowed); cliff: no forward
drive.

Reward (sent with the next tick, judging this tick's action), in [-1, 1]:
  -1 when a reflex blocked forward drive into an obstacle or over a cliff (pushing on costs, as
  in the simulator); otherwise 0.1 x drive power / 50 % (forward progress pays, reversing costs:
  a proxy for the simulator's 20 per metre along the heading, since the car has no odometry),
  minus up to 0.5 as the ultrasonic distance falls below 15 cm (0.5 x (0.15 - d) / 0.15).
  --no_reward sends none.

Not run by the test suite (it needs the car); `python3 -m py_compile` checks it and the tests
check its sensor, reflex and reward mapping against the values the C++ adapter documents.
"""
import argparse
import dataclasses
import math
import signal
import socket
import sys
import threading
import time

SENSOR_NAMES = ("ultrasonic", "grayscale_left", "grayscale_middle", "grayscale_right",
                "battery", "steering", "pan", "tilt", "left_speed", "right_speed",
                "line_detected", "cliff_detected")
MOTOR_NAMES = ("drive", "steer", "pan", "tilt")

# The adapter's constants (client/picarx/picarx_adapter.h).
LOW_BATTERY_V = 6.4
OBSTACLE_STOP_M = 0.02
ULTRASONIC_MAX_M = 4.0
GRAYSCALE_MAX = 4095.0
BATTERY_MIN_V, BATTERY_MAX_V = 6.0, 8.4
STEERING_RANGE_DEG = 30.0
PAN_RANGE_DEG = 90.0
TILT_MIN_DEG, TILT_MAX_DEG = -35.0, 65.0
MOTOR_SPEED_MAX = 100.0
DRIVE_DUTY_MAX_PCT = 50.0
STEER_CMD_MAX_DEG = 25.0
PAN_CMD_MAX_DEG = 45.0
TILT_CMD_MAX_DEG = 30.0

# The reward's shape (see the module docstring): the same proxy as picarx-brainstem's
# (client/picarx/hardware/picarx_hardware.h, ProxyReward).
PROGRESS_REWARD = 0.1
NEAR_M = 0.15
NEAR_PENALTY = 0.5


@dataclasses.dataclass
class RawReading:
    """One reading of the car, in hardware units (the adapter's RawReading)."""
    ultrasonic_m: float = ULTRASONIC_MAX_M
    grayscale: tuple = (0.0, 0.0, 0.0)
    battery_v: float = BATTERY_MAX_V
    steering_deg: float = 0.0
    pan_deg: float = 0.0
    tilt_deg: float = 0.0
    left_speed: float = 0.0
    right_speed: float = 0.0
    line_detected: bool = False
    cliff_detected: bool = False


@dataclasses.dataclass
class HardwareCommand:
    """What the car is told to do (the adapter's HardwareCommand)."""
    drive_duty_pct: float = 0.0   # -50..50, positive forward
    steering_deg: float = 0.0     # -25..25
    pan_deg: float = 0.0          # -45..45
    tilt_deg: float = 0.0         # -30..30
    reflex: str = "none"          # none, safe_stop, low_battery, obstacle, cliff


def _normalize(v, lo, hi):
    return min(max(2.0 * (v - lo) / (hi - lo) - 1.0, -1.0), 1.0)


def _finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def normalize_sensors(r):
    """The 12 sensors in [-1, 1] and the bit mask of readings replaced as unusable."""
    channels = [
        (r.ultrasonic_m, 0.0, ULTRASONIC_MAX_M, -1.0, _finite(r.ultrasonic_m) and r.ultrasonic_m >= 0),
        (r.grayscale[0], 0.0, GRAYSCALE_MAX, 0.0, None),
        (r.grayscale[1], 0.0, GRAYSCALE_MAX, 0.0, None),
        (r.grayscale[2], 0.0, GRAYSCALE_MAX, 0.0, None),
        (r.battery_v, BATTERY_MIN_V, BATTERY_MAX_V, 0.0, None),
        (r.steering_deg, -STEERING_RANGE_DEG, STEERING_RANGE_DEG, 0.0, None),
        (r.pan_deg, -PAN_RANGE_DEG, PAN_RANGE_DEG, 0.0, None),
        (r.tilt_deg, TILT_MIN_DEG, TILT_MAX_DEG, 0.0, None),
        (r.left_speed, -MOTOR_SPEED_MAX, MOTOR_SPEED_MAX, 0.0, None),
        (r.right_speed, -MOTOR_SPEED_MAX, MOTOR_SPEED_MAX, 0.0, None),
    ]
    values, invalid = [], 0
    for i, (v, lo, hi, safe, valid) in enumerate(channels):
        if valid is None:
            valid = _finite(v)
        if valid:
            values.append(_normalize(float(v), lo, hi))
        else:
            values.append(safe)
            invalid |= 1 << i
    values.append(1.0 if r.line_detected else -1.0)
    values.append(1.0 if r.cliff_detected else -1.0)
    return values, invalid


def _motor(motors, k):
    if k >= len(motors) or not _finite(motors[k]):
        return 0.0
    return min(max(float(motors[k]), -1.0), 1.0)


def to_hardware(motors, reading, safe_stop):
    """Motors in [-1, 1] to a HardwareCommand, after the reflexes (fail safe: a battery or
    distance reading that cannot be trusted counts as the dangerous case)."""
    cmd = HardwareCommand(drive_duty_pct=_motor(motors, 0) * DRIVE_DUTY_MAX_PCT,
                          steering_deg=_motor(motors, 1) * STEER_CMD_MAX_DEG,
                          pan_deg=_motor(motors, 2) * PAN_CMD_MAX_DEG,
                          tilt_deg=_motor(motors, 3) * TILT_CMD_MAX_DEG)
    battery_ok = _finite(reading.battery_v) and reading.battery_v >= LOW_BATTERY_V
    path_clear = _finite(reading.ultrasonic_m) and reading.ultrasonic_m >= OBSTACLE_STOP_M
    if safe_stop:
        cmd.drive_duty_pct, cmd.reflex = 0.0, "safe_stop"
    elif not battery_ok:
        cmd.drive_duty_pct, cmd.reflex = 0.0, "low_battery"
    elif not path_clear and cmd.drive_duty_pct > 0:
        cmd.drive_duty_pct, cmd.reflex = 0.0, "obstacle"
    elif reading.cliff_detected and cmd.drive_duty_pct > 0:
        cmd.drive_duty_pct, cmd.reflex = 0.0, "cliff"
    return cmd


def tick_reward(cmd, reading):
    """The reward for `cmd` (the previous tick's command), seen in `reading` (this tick's)."""
    if cmd.reflex in ("obstacle", "cliff"):
        return -1.0
    reward = PROGRESS_REWARD * cmd.drive_duty_pct / DRIVE_DUTY_MAX_PCT
    d = reading.ultrasonic_m
    if _finite(d) and 0 <= d < NEAR_M:
        reward -= NEAR_PENALTY * (NEAR_M - d) / NEAR_M
    return min(max(reward, -1.0), 1.0)


class Car:
    """The PiCar-X through SunFounder's picarx library; remembers what it commanded."""

    def __init__(self, battery_v=None):
        from picarx import Picarx  # only here: the rest of this file runs without the car
        self.px = Picarx()
        self.commanded = HardwareCommand()
        if battery_v is not None:
            self._battery = lambda: battery_v
        else:
            try:
                from robot_hat.utils import get_battery_voltage
            except ImportError as e:
                raise SystemExit("picarx_drive: cannot read the battery (robot_hat.utils."
                                 "get_battery_voltage: %s); pass --battery_v=VOLTS to state it" % e)
            self._battery = get_battery_voltage

    @staticmethod
    def _read(fn, *args):
        try:
            return fn(*args)
        except (OSError, ValueError, TypeError):  # an I2C or GPIO hiccup: unreadable this tick
            return None

    def read(self):
        px, c = self.px, self.commanded
        distance_cm = self._read(px.get_distance)
        grayscale = self._read(px.get_grayscale_data)
        if not grayscale or len(grayscale) != 3:
            grayscale = (math.nan, math.nan, math.nan)
        battery = self._read(self._battery)
        valid_gray = all(_finite(g) for g in grayscale)
        line, cliff = False, True  # an unreadable floor sensor may hide a drop: fail safe
        if valid_gray:
            status = self._read(px.get_line_status, list(grayscale))
            line = bool(status) and any(bool(s) for s in status)
            cliff_status = self._read(self._cliff_status, list(grayscale))
            cliff = True if cliff_status is None else bool(cliff_status)
        return RawReading(
            ultrasonic_m=distance_cm / 100.0 if _finite(distance_cm) else math.nan,
            grayscale=tuple(float(g) if _finite(g) else math.nan for g in grayscale),
            battery_v=float(battery) if _finite(battery) else math.nan,
            steering_deg=c.steering_deg, pan_deg=c.pan_deg, tilt_deg=c.tilt_deg,
            left_speed=c.drive_duty_pct, right_speed=c.drive_duty_pct,
            line_detected=line, cliff_detected=cliff)

    def _cliff_status(self, grayscale):
        # picarx 2.0 has get_cliff_status; later versions call it is_on_cliff.
        fn = getattr(self.px, "get_cliff_status", None) or getattr(self.px, "is_on_cliff", None)
        if fn is not None:
            return fn(grayscale)
        reference = getattr(self.px, "cliff_reference", (500, 500, 500))  # picarx's default
        return any(g <= ref for g, ref in zip(grayscale, reference))

    def apply(self, cmd):
        px = self.px
        px.set_dir_servo_angle(cmd.steering_deg)
        px.set_cam_pan_angle(cmd.pan_deg)
        px.set_cam_tilt_angle(cmd.tilt_deg)
        if cmd.drive_duty_pct > 0:
            px.forward(cmd.drive_duty_pct)
        elif cmd.drive_duty_pct < 0:
            px.backward(-cmd.drive_duty_pct)
        else:
            px.stop()
        self.commanded = cmd

    def stop(self):
        """Motors off, servos centred; each step tried even if another fails."""
        for action in (self.px.stop, lambda: self.px.set_dir_servo_angle(0),
                       lambda: self.px.set_cam_pan_angle(0), lambda: self.px.set_cam_tilt_angle(0),
                       self.px.stop):
            try:
                action()
            except Exception as e:  # keep going: the motors must end up stopped
                print(f"picarx_drive: while stopping: {e}", file=sys.stderr)
        self.commanded = HardwareCommand()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051", help="brain-server host:port")
    parser.add_argument("--robot_id", default="picarx-" + socket.gethostname(),
                        help="stable identity of this car (1-128 bytes)")
    parser.add_argument("--hz", type=float, default=20.0, help="control ticks per second")
    parser.add_argument("--deadline_ms", type=float, default=40.0,
                        help="how long a tick waits for the brain before a safe stop")
    parser.add_argument("--seed", type=int, default=0, help="brain seed (0 = the server picks)")
    parser.add_argument("--fresh", action="store_true", help="start a new brain for this id")
    parser.add_argument("--no_reward", action="store_true", help="send no reward")
    parser.add_argument("--battery_v", type=float, default=None,
                        help="state the battery voltage instead of reading it (only where "
                             "robot_hat cannot read it; disables the low-battery reflex's input)")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0 = run "
                        "until Ctrl-C)")
    parser.add_argument("--connect_timeout_s", type=float, default=10.0)
    args = parser.parse_args()
    if not args.hz > 0 or not args.deadline_ms > 0:
        parser.error("--hz and --deadline_ms must be positive")

    import fieldbrain  # after argparse, so --help works without the generated stubs

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    car = Car(battery_v=args.battery_v)
    robot = fieldbrain.Robot(
        args.target, robot_id=args.robot_id, robot_type="picarx", sensor_names=SENSOR_NAMES,
        motor_names=MOTOR_NAMES, control_hz=args.hz, has_reward=not args.no_reward,
        seed=args.seed, fresh=args.fresh)
    try:
        car.stop()
        if robot.wait_connected(args.connect_timeout_s):
            w = robot.welcome()
            print(f"picarx_drive: connected to {args.target}: engine {w.engine}, session "
                  f"{w.session_id}, {'resumed' if w.resumed else 'new'} brain at cycle {w.cycle}")
        else:
            print(f"picarx_drive: not connected within {args.connect_timeout_s} s "
                  f"({robot.link_error()}); the car stays stopped until the brain answers")
        period = 1.0 / args.hz
        deadline = args.deadline_ms / 1000.0
        started = next_tick = next_report = time.monotonic()
        previous = None
        ticks = answered = invalid_readings = 0
        stops, reflexes, rtt_sum, confidence_sum = {}, {}, 0.0, 0.0
        while not stop.is_set():
            if args.seconds > 0 and time.monotonic() - started >= args.seconds:
                break
            reading = car.read()
            sensors, invalid = normalize_sensors(reading)
            reward = None
            if not args.no_reward and previous is not None:
                reward = tick_reward(previous, reading)
            r = robot.step(sensors, reward, deadline)
            cmd = to_hardware(r.motors, reading, r.safe_stop)
            car.apply(cmd)
            previous = cmd

            ticks += 1
            invalid_readings += invalid != 0
            if r.safe_stop:
                stops[r.cause.value] = stops.get(r.cause.value, 0) + 1
            else:
                answered += 1
                rtt_sum += r.round_trip
                confidence_sum += r.confidence
            if cmd.reflex not in ("none", "safe_stop"):
                reflexes[cmd.reflex] = reflexes.get(cmd.reflex, 0) + 1
            now = time.monotonic()
            if now >= next_report:
                rtt = f"{1e3 * rtt_sum / answered:.2f} ms" if answered else "-"
                conf = f"{confidence_sum / answered:.3f}" if answered else "-"
                print(f"[{now - started:7.1f} s] ticks {ticks} answered {answered} rtt {rtt} "
                      f"confidence {conf} safe stops {stops or 0} reflexes {reflexes or 0} "
                      f"unusable readings {invalid_readings}", flush=True)
                next_report = now + 1.0
            next_tick += period
            pause = next_tick - time.monotonic()
            if pause > 0:
                stop.wait(pause)
            else:
                next_tick = time.monotonic()  # late: start the next tick now, do not catch up
    finally:
        car.stop()
        robot.close()
    print("picarx_drive: stopped, motors off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
