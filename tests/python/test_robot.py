"""The Python client (client/python, package fieldbrain) against the real brain-server.

Run by python_client_test.sh, which generates the stubs and sets the environment:
  BRAIN_SERVER         the daemon binary
  FIELDBRAIN_STUBS     the generated brain/v1 modules (read by fieldbrain itself)
  FIELDBRAIN_TEST_WORK a scratch directory for the daemons' logs
  PICARX_EXAMPLE       client/python/examples/picarx_drive.py
PYTHONPATH holds client/python. Each daemon runs the CPU engine with the small field on a free
loopback port.
"""
import importlib.util
import math
import os
import re
import signal
import socket
import subprocess
import threading
import time
import unittest

import fieldbrain
from fieldbrain import StopCause, pb

SERVER = os.environ["BRAIN_SERVER"]
WORK = os.environ["FIELDBRAIN_TEST_WORK"]
SENSORS, MOTORS = 12, 4
OK_DEADLINE = 2.0  # generous: the test machine may be busy; the answers take ~1 ms when idle
# Scheduling noise allowed on a busy 2-core machine (ctest -j2 beside a build): a step that must
# not wait returns within IMMEDIATE, one that waits returns within its deadline + IMMEDIATE. The
# deadlines these are told apart from are 1 s or more.
IMMEDIATE = 0.25


class Daemon:
    """One brain-server process on 127.0.0.1; port 0 lets it pick a free one."""

    count = 0

    def __init__(self, port=0, max_robots=8):
        Daemon.count += 1
        self.log_path = os.path.join(WORK, f"server{Daemon.count}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [SERVER, f"--listen=127.0.0.1:{port}", "--engine=cpu", "--field=small",
             f"--max_robots={max_robots}", "--threads=1", "--memory_arena_bytes=0"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = self._wait_listening()
        self.target = f"127.0.0.1:{self.port}"

    def _wait_listening(self):
        end = time.monotonic() + 30
        while time.monotonic() < end:
            with open(self.log_path) as f:
                m = re.search(r" listening on 127\.0\.0\.1:(\d+) ", f.read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"brain-server exited {self.proc.returncode} at start:\n"
                                   + open(self.log_path).read())
            time.sleep(0.05)
        raise RuntimeError("brain-server did not start listening:\n" + open(self.log_path).read())

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self):
        """SIGTERM; returns the exit status (0 for a clean stop)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


class LinkBreaker:
    """A TCP relay from a loopback port to the daemon whose open connections can be cut (both
    ends closed) while it keeps accepting new ones: the network drops, the daemon lives on."""

    def __init__(self, upstream_port):
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._done.is_set():
            try:
                down, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self._upstream))
            except OSError:
                down.close()
                continue
            with self._lock:
                self._sockets += [down, up]
            for src, dst in ((down, up), (up, down)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self._done.set()
        self._thread.join()
        self._listener.close()
        self.cut()


def sensors_at(t):
    return [math.sin(0.3 * t + k) * 0.9 for k in range(SENSORS)]


def new_robot(target, robot_id, **kw):
    return fieldbrain.Robot(target, robot_id=robot_id, robot_type="test",
                            sensor_count=SENSORS, motor_count=MOTORS, has_reward=True, **kw)


def wait_for(predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


class RobotTest(unittest.TestCase):
    """One daemon for the class; each test drives its own robot id."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        if rc != 0:
            raise AssertionError(f"brain-server exited {rc} on SIGTERM, not 0")

    def setUp(self):
        self.robots = []

    def tearDown(self):
        for robot in self.robots:
            robot.close()

    def connected_robot(self, robot_id, **kw):
        robot = new_robot(self.daemon.target, robot_id, **kw)
        self.robots.append(robot)
        self.assertTrue(robot.wait_connected(10), robot.link_error())
        return robot

    def assert_answered(self, r, deadline=OK_DEADLINE):
        self.assertFalse(r.safe_stop, r.reason)
        self.assertEqual(r.cause, StopCause.NONE)
        self.assertEqual(r.reason, "")
        self.assertEqual(r.status, pb.OK)
        self.assertEqual(r.status_name, "OK")
        self.assertEqual(len(r.motors), MOTORS)
        for m in r.motors:
            self.assertTrue(math.isfinite(m) and -1.0 <= m <= 1.0, r.motors)
        self.assertTrue(0.0 <= r.confidence <= 1.0, r.confidence)
        self.assertTrue(math.isfinite(r.prediction_error))
        self.assertLessEqual(r.round_trip, deadline + IMMEDIATE)

    def assert_safe_stop(self, r, cause):
        self.assertTrue(r.safe_stop)
        self.assertEqual(r.cause, cause, r.reason)
        self.assertEqual(r.motors, [0.0] * MOTORS)
        self.assertNotEqual(r.reason, "")

    def test_welcome_describes_the_brain(self):
        robot = self.connected_robot("welcome", seed=1234)
        self.assertTrue(robot.connected())
        self.assertEqual(robot.link_error(), "")
        w = robot.welcome()
        self.assertFalse(w.resumed)
        self.assertEqual(w.cycle, 0)
        self.assertEqual(w.seed, 1234)
        self.assertEqual(w.engine, "cpu")
        self.assertEqual((w.field.channels, w.field.x, w.field.y, w.field.z), (32, 16, 16, 16))
        self.assertGreaterEqual(w.limits.max_motors, MOTORS)
        self.assertGreaterEqual(w.limits.max_sensors, SENSORS)
        self.assertTrue(w.session_id)
        self.assertEqual(len(w.resume_token), 32)
        # The brain answers with the profile's motor count.
        r = robot.step(sensors_at(0), None, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.cycle, 1)

    def test_fifty_steps_in_a_row(self):
        robot = self.connected_robot("fifty")
        for t in range(50):
            r = robot.step(sensors_at(t), 0.05 * math.cos(t), OK_DEADLINE)
            self.assert_answered(r)
            self.assertEqual(r.seq, t + 1)
            self.assertEqual(r.cycle, t + 1)  # every frame ran, once, in order
        self.assertEqual(robot.late_frames(), 0)

    def test_wrong_sensor_count_is_bad_input_and_sends_nothing(self):
        robot = self.connected_robot("count")
        self.assert_answered(robot.step(sensors_at(0), None, OK_DEADLINE))
        for bad in ([0.0] * 3, [0.0] * (SENSORS + 1), []):
            r = robot.step(bad, None, OK_DEADLINE)
            self.assert_safe_stop(r, StopCause.BAD_INPUT)
            self.assertIn(f"sensor count {len(bad)} differs from the profile's {SENSORS}",
                          r.reason)
            self.assertEqual(r.status, pb.FRAME_STATUS_UNSPECIFIED)
            self.assertLess(r.round_trip, IMMEDIATE)
        # Had a frame gone out, the server would have answered it (one MotorFrame per frame),
        # in order, before the next one's answer: it would show as a late frame. The pause (a
        # control tick) gives a queued frame time to leave before the next replaces it.
        time.sleep(0.1)
        r = robot.step(sensors_at(1), None, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.cycle, 2)
        time.sleep(0.1)
        self.assertEqual(robot.late_frames(), 0)

    def test_non_finite_input_is_bad_input(self):
        robot = self.connected_robot("finite")
        cases = [
            ([math.nan] + [0.0] * (SENSORS - 1), None, "sensor 0 is nan"),
            ([0.0] * (SENSORS - 1) + [math.inf], None, f"sensor {SENSORS - 1} is inf"),
            ([0.0] * 5 + [-math.inf] + [0.0] * 6, None, "sensor 5 is -inf"),
            ([0.0] * 2 + [1e39] + [0.0] * 9, None, "not a finite float32"),
            ([0.0] * SENSORS, math.nan, "reward is nan"),
            (["x"] * SENSORS, None, "sensors are not numbers"),
        ]
        for sensors, reward, text in cases:
            r = robot.step(sensors, reward, OK_DEADLINE)
            self.assert_safe_stop(r, StopCause.BAD_INPUT)
            self.assertIn(text, r.reason)
            self.assertLess(r.round_trip, IMMEDIATE)
        for deadline in (0, -1, math.nan, "soon"):
            r = robot.step([0.0] * SENSORS, None, deadline)
            self.assert_safe_stop(r, StopCause.BAD_INPUT)
            self.assertEqual(r.reason, "deadline must be positive")
        time.sleep(0.1)  # as above: nothing was queued, so nothing is answered
        r = robot.step(sensors_at(0), 0.0, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.cycle, 1)
        time.sleep(0.1)
        self.assertEqual(robot.late_frames(), 0)

    def test_unmeetable_deadline_then_late_frame_dropped(self):
        robot = self.connected_robot("deadline")
        self.assert_answered(robot.step(sensors_at(0), None, OK_DEADLINE))
        r = robot.step(sensors_at(1), None, 1e-6)
        self.assert_safe_stop(r, StopCause.DEADLINE)
        self.assertEqual(r.reason, "deadline of 1 us passed")
        self.assertEqual(r.seq, 2)
        self.assertLess(r.round_trip, IMMEDIATE)
        # A control loop waits for its next tick; the frame goes out meanwhile and its answer
        # (DEADLINE_EXCEEDED, or motors after all) arrives with nobody waiting: dropped.
        self.assertTrue(wait_for(lambda: robot.late_frames() == 1, 5), robot.late_frames())
        r = robot.step(sensors_at(2), None, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.seq, 3)
        r = robot.step(sensors_at(3), None, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.seq, 4)
        self.assertEqual(robot.late_frames(), 1)

    def test_server_rejected_frame_is_server_cause(self):
        robot = self.connected_robot("range")
        sensors = sensors_at(0)
        sensors[3] = 1.5
        r = robot.step(sensors, None, OK_DEADLINE)
        self.assert_safe_stop(r, StopCause.SERVER)
        self.assertEqual(r.status, pb.OUT_OF_RANGE)
        self.assertEqual(r.reason, "server: OUT_OF_RANGE: value 3 is 1.5, outside [-1, 1]")
        r = robot.step(sensors_at(0), -2.0, OK_DEADLINE)
        self.assert_safe_stop(r, StopCause.SERVER)
        self.assertEqual(r.status_name, "OUT_OF_RANGE")
        self.assertIn("reward is -2", r.reason)
        r = robot.step(sensors_at(1), 1.0, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.cycle, 1)  # the rejected frames did not run

    def test_resume_token_gives_the_same_brain_back(self):
        first = self.connected_robot("resume", seed=77)
        for t in range(5):
            last = first.step(sensors_at(t), None, OK_DEADLINE)
            self.assert_answered(last)
        w1 = first.welcome()
        first.close()

        second = self.connected_robot("resume", resume_token=w1.resume_token)
        w2 = second.welcome()
        self.assertTrue(w2.resumed)
        self.assertEqual(w2.session_id, w1.session_id)
        self.assertEqual(w2.seed, 77)
        self.assertEqual(w2.cycle, last.cycle)
        r = second.step(sensors_at(5), None, OK_DEADLINE)
        self.assert_answered(r)
        self.assertEqual(r.cycle, last.cycle + 1)
        second.close()

        # Without the token the kept brain is neither given out nor replaced: refused.
        third = new_robot(self.daemon.target, "resume")
        try:
            self.assertFalse(third.wait_connected(1.5))
            self.assertIn("FAILED_PRECONDITION", third.link_error())
            self.assertIn("has a kept brain", third.link_error())
            r = third.step(sensors_at(0), None, OK_DEADLINE)
            self.assertEqual(r.cause, StopCause.LINK_DOWN)
        finally:
            third.close()
        fourth = self.connected_robot("resume", resume_token=w1.resume_token)
        self.assertTrue(fourth.welcome().resumed, "the refused Hello must not have cost the brain")
        fourth.close()

    def test_fresh_gets_a_new_brain(self):
        first = self.connected_robot("fresh")
        self.assert_answered(first.step(sensors_at(0), None, OK_DEADLINE))
        w1 = first.welcome()
        first.close()
        second = self.connected_robot("fresh", fresh=True)
        self.assertFalse(second.welcome().resumed)
        self.assertNotEqual(second.welcome().session_id, w1.session_id)

    def test_close(self):
        robot = self.connected_robot("close")
        with robot:
            self.assert_answered(robot.step(sensors_at(0), None, OK_DEADLINE))
        self.assertTrue(robot.closed())
        self.assertFalse(robot.connected())
        r = robot.step(sensors_at(1), None, OK_DEADLINE)
        self.assert_safe_stop(r, StopCause.CLOSED)
        self.assertEqual(r.reason, "client closed")
        self.assertLess(r.round_trip, IMMEDIATE)
        self.assertFalse(robot.wait_connected(0.1))
        robot.close()  # idempotent

    def test_close_from_another_thread_ends_a_waiting_step(self):
        robot = self.connected_robot("close-wait")
        timer = threading.Timer(0.2, robot.close)
        timer.start()
        r = None
        started = time.monotonic()
        while time.monotonic() - started < 5:
            r = robot.step(sensors_at(0), None, 10.0)
            if r.safe_stop:
                break
        timer.join()
        self.assert_safe_stop(r, StopCause.CLOSED)
        self.assertLess(time.monotonic() - started, 2)

    def test_options_are_checked(self):
        target = self.daemon.target
        bad = [
            dict(robot_id="", sensor_count=1, motor_count=1),
            dict(robot_id="x" * 129, sensor_count=1, motor_count=1),
            dict(robot_id="a", sensor_count=0, motor_count=1),
            dict(robot_id="a", sensor_count=2, motor_count=1, sensor_names=["one"]),
            dict(robot_id="a", sensor_count=1, motor_count=1, initial_backoff_s=3),
            dict(robot_id="a", sensor_count=1, motor_count=1, fresh=True, resume_token="t"),
            dict(sensor_count=1, motor_count=1),
            dict(robot_id="a", sensor_count=1, motor_count=1, seed=-1),
        ]
        for kw in bad:
            with self.assertRaises(ValueError, msg=str(kw)):
                fieldbrain.Robot(target, **kw)
        with self.assertRaises(ValueError):
            fieldbrain.Robot("", robot_id="a", sensor_count=1, motor_count=1)
        # Names alone give the counts; a RobotProfile works as well.
        with fieldbrain.Robot(target, robot_id="named", sensor_names=["a", "b"],
                              motor_names=["m"]) as robot:
            self.assertEqual((robot.profile.sensor_count, robot.profile.motor_count), (2, 1))
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            self.assertEqual(len(robot.step([0.5, -0.5], None, OK_DEADLINE).motors), 1)
        profile = fieldbrain.make_profile("profiled", 3, 2, robot_type="test", control_hz=50)
        with fieldbrain.Robot(target, profile) as robot:
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            self.assert_answered_count(robot.step([0.0] * 3, None, OK_DEADLINE), 2)

    def assert_answered_count(self, r, motors):
        self.assertFalse(r.safe_stop, r.reason)
        self.assertEqual(len(r.motors), motors)


class NoServerTest(unittest.TestCase):
    def test_steps_are_link_down_at_once(self):
        with socket.create_server(("127.0.0.1", 0)) as s:
            port = s.getsockname()[1]  # free once closed: nothing listens there
        with new_robot(f"127.0.0.1:{port}", "nobody") as robot:
            self.assertFalse(robot.wait_connected(0.3))
            self.assertNotEqual(robot.link_error(), "")
            for t in range(5):
                r = robot.step(sensors_at(t), None, 1.0)
                self.assertTrue(r.safe_stop)
                self.assertEqual(r.cause, StopCause.LINK_DOWN)
                self.assertTrue(r.reason.startswith("link down: "), r.reason)
                self.assertLess(r.round_trip, IMMEDIATE)
            self.assertIsNone(robot.welcome())


class ReconnectTest(unittest.TestCase):
    def test_daemon_killed_and_restarted(self):
        daemon = Daemon()
        port = daemon.port
        robot = new_robot(daemon.target, "reconnect")  # seed 0: the server picks
        try:
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            for t in range(3):
                r = robot.step(sensors_at(t), None, OK_DEADLINE)
                self.assertFalse(r.safe_stop, r.reason)
            w1 = robot.welcome()

            daemon.kill()
            deadline = 1.0
            seen_link_down = False
            end = time.monotonic() + 5
            while time.monotonic() < end and not seen_link_down:
                r = robot.step(sensors_at(0), None, deadline)
                self.assertTrue(r.safe_stop)
                self.assertIn(r.cause, (StopCause.LINK_DOWN, StopCause.DEADLINE), r.reason)
                self.assertLessEqual(r.round_trip, deadline + IMMEDIATE)
                seen_link_down = r.cause == StopCause.LINK_DOWN
            self.assertTrue(seen_link_down, "no LINK_DOWN within 5 s of the kill")
            self.assertFalse(robot.connected())
            for t in range(5):
                r = robot.step(sensors_at(t), None, deadline)
                self.assertEqual(r.cause, StopCause.LINK_DOWN, r.reason)
                self.assertTrue(r.reason.startswith("link down: "), r.reason)
                self.assertLess(r.round_trip, IMMEDIATE)  # no waiting while the link is down
                time.sleep(0.05)

            time.sleep(1.0)  # let the reconnect backoff grow a little
            daemon = Daemon(port=port)
            started = time.monotonic()
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            # Within a few seconds: this client's backoff (at most 2.4 s) and gRPC's channel
            # backoff (the same bounds) can add up when a retry just misses the channel's.
            self.assertLess(time.monotonic() - started, 8.0)
            w2 = robot.welcome()
            # The restarted daemon kept nothing, so the token brings no brain back; the Hello
            # carried the first Welcome's seed, which the new brain runs on.
            self.assertFalse(w2.resumed)
            self.assertNotEqual(w2.session_id, w1.session_id)
            self.assertEqual(w2.seed, w1.seed)
            for t in range(5):
                r = robot.step(sensors_at(t), None, OK_DEADLINE)
                self.assertFalse(r.safe_stop, r.reason)
                self.assertEqual(r.status, pb.OK)
                self.assertEqual(r.cycle, t + 1)
        finally:
            robot.close()
            self.assertEqual(daemon.stop(), 0)

    def test_link_cut_resumes_the_same_brain(self):
        daemon = Daemon()
        relay = LinkBreaker(daemon.port)
        robot = new_robot(f"127.0.0.1:{relay.port}", "cut", seed=99)
        try:
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            for t in range(4):
                last = robot.step(sensors_at(t), None, OK_DEADLINE)
                self.assertFalse(last.safe_stop, last.reason)
            w1 = robot.welcome()

            relay.cut()
            self.assertTrue(wait_for(lambda: not robot.connected(), 5), "cut not noticed")
            self.assertTrue(robot.wait_connected(10), robot.link_error())
            w2 = robot.welcome()
            # The daemon kept the brain; the reconnect's Hello presented the token and got it.
            self.assertTrue(w2.resumed)
            self.assertEqual(w2.session_id, w1.session_id)
            self.assertEqual(w2.resume_token, w1.resume_token)
            self.assertEqual(w2.seed, 99)
            self.assertEqual(w2.cycle, last.cycle)
            r = robot.step(sensors_at(4), None, OK_DEADLINE)
            self.assertFalse(r.safe_stop, r.reason)
            self.assertEqual(r.cycle, last.cycle + 1)
        finally:
            robot.close()
            relay.close()
            self.assertEqual(daemon.stop(), 0)


class PicarxExampleTest(unittest.TestCase):
    """The example's mapping against the values client/picarx/picarx_adapter.h documents."""

    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("picarx_drive", os.environ["PICARX_EXAMPLE"])
        cls.ex = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.ex)

    def test_sensors(self):
        ex = self.ex
        self.assertEqual(len(ex.SENSOR_NAMES), SENSORS)
        self.assertEqual(len(ex.MOTOR_NAMES), MOTORS)
        reading = ex.RawReading(ultrasonic_m=2.0, grayscale=(0, 2047.5, 4095), battery_v=7.2,
                                steering_deg=15, pan_deg=-90, tilt_deg=65, left_speed=50,
                                right_speed=-100, line_detected=True, cliff_detected=False)
        values, invalid = ex.normalize_sensors(reading)
        expected = [0, -1, 0, 1, 0, 0.5, -1, 1, 0.5, -1, 1, -1]
        self.assertEqual(invalid, 0)
        for got, want in zip(values, expected):
            self.assertAlmostEqual(got, want, places=5)
        values, invalid = ex.normalize_sensors(ex.RawReading(ultrasonic_m=-0.01, battery_v=math.nan,
                                                             grayscale=(9999, 0, 0)))
        self.assertEqual(values[0], -1.0)   # a lost echo reads as an obstacle near
        self.assertEqual(values[4], 0.0)    # unreadable: mid-range
        self.assertEqual(values[1], 1.0)    # clamped
        self.assertEqual(invalid, (1 << 0) | (1 << 4))

    def test_reflexes_and_reward(self):
        ex = self.ex
        clear = ex.RawReading(ultrasonic_m=1.0, battery_v=8.0)
        cmd = ex.to_hardware([1, -1, 0.5, 2], clear, False)
        self.assertEqual((cmd.drive_duty_pct, cmd.steering_deg, cmd.pan_deg, cmd.tilt_deg,
                          cmd.reflex), (50, -25, 22.5, 30, "none"))
        self.assertAlmostEqual(ex.tick_reward(cmd, clear), 0.1)
        self.assertEqual(ex.to_hardware([1, 0, 0, 0], clear, True).reflex, "safe_stop")
        low = ex.RawReading(ultrasonic_m=1.0, battery_v=6.3)
        self.assertEqual(ex.to_hardware([-1, 0, 0, 0], low, False).drive_duty_pct, 0)
        wall = ex.RawReading(ultrasonic_m=0.01, battery_v=8.0)
        blocked = ex.to_hardware([1, 0, 0, 0], wall, False)
        self.assertEqual((blocked.drive_duty_pct, blocked.reflex), (0, "obstacle"))
        self.assertEqual(ex.tick_reward(blocked, wall), -1.0)
        self.assertEqual(ex.to_hardware([-1, 0, 0, 0], wall, False).drive_duty_pct, -50)
        lost = ex.RawReading(ultrasonic_m=math.nan, battery_v=8.0)
        self.assertEqual(ex.to_hardware([1, 0, 0, 0], lost, False).reflex, "obstacle")
        edge = ex.RawReading(ultrasonic_m=1.0, battery_v=8.0, cliff_detected=True)
        self.assertEqual(ex.to_hardware([1, 0, 0, 0], edge, False).reflex, "cliff")
        near = ex.RawReading(ultrasonic_m=0.05, battery_v=8.0)
        backing = ex.to_hardware([-1, 0, 0, 0], near, False)
        self.assertAlmostEqual(ex.tick_reward(backing, near), -0.1 - 0.5 * 0.1 / 0.15)


if __name__ == "__main__":
    unittest.main(verbosity=2)
