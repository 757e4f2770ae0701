"""Robot: the robot side of the fieldbrain `Cycle` stream, in Python.

The same contract as the C++ BrainClient (client/brain_client.h):

A Robot keeps one bidirectional stream to a brain server open for its whole life. The constructor
starts a background thread that connects, sends a Hello, waits for the Welcome and, whenever the
stream fails, reconnects with exponential backoff (initial_backoff_s doubling up to
max_backoff_s, +-20 % jitter). Reconnects present the resume token and seed of the last Welcome
(and never `fresh`), so the server gives the same brain back; if the server refuses the token
(FAILED_PRECONDITION before a Welcome) the next Hellos ask for a new brain, which the server grants
once its kept brain has expired.
HTTP/2 keepalive (a ping after 10 s without traffic, the link given up when its ack is 5 s late)
notices a server or network that went silent without closing the connection.

step() sends one SensorFrame and blocks until the MotorFrame with the same seq arrives or the
deadline passes. It never blocks longer than the deadline (plus scheduling noise) and never
raises: when no usable answer exists it returns a SAFE STOP, i.e. motor_count zero motors,
safe_stop = True, a cause and a human-readable reason:
  - the deadline passed               DEADLINE   "deadline of 20 ms passed"
  - the link is down (or went down)   LINK_DOWN  "link down: UNAVAILABLE: failed to connect ..."
  - the server rejected the frame     SERVER     "server: OUT_OF_RANGE: value 3 is 1.7, outside [-1, 1]"
  - the input is unusable             BAD_INPUT  "sensor count 3 differs from the profile's 12"
  - the robot was closed              CLOSED     "client closed"
Unusable input (wrong sensor count, a sensor or reward that is not a finite float32, a deadline
that is not positive) is caught before anything is sent. Motor frames that arrive after their
step gave up (late seqs) are dropped; late_frames() counts them.

Threading: one thread may call step() (it is the control loop); any thread may call connected(),
welcome(), wait_connected(), link_error(), late_frames() and close().
"""
import dataclasses
import enum
import math
import random
import threading
import time

import grpc

from ._proto import load_brain_pb2

pb = load_brain_pb2()

# The longest deadline a step honours: the wire carries it as SensorFrame.deadline_us, a uint32 of
# microseconds (about 71.6 minutes). Longer deadlines, math.inf included, are clamped to this.
MAX_STEP_DEADLINE_S = (2**32 - 1) / 1e6

# HTTP/2 keepalive, as the C++ client: ping the server after 10 s without traffic and give the link
# up when the ack is 5 s late, with or without an open call; the server accepts pings this often
# (server/brain_server.h).
KEEPALIVE_TIME_MS = 10_000
KEEPALIVE_TIMEOUT_MS = 5_000

_CYCLE_METHOD = "/brain.v1.Brain/Cycle"
_FLOAT32_MAX = 3.4028234663852886e38
# The server's answer to a Hello whose token does not open its kept brain (proto/brain/v1).
_REFUSED_TOKEN_CODES = (grpc.StatusCode.FAILED_PRECONDITION,)


class StopCause(enum.Enum):
    """Why a step returned a safe stop (NONE when it did not). The value is a short stable name."""
    NONE = "none"
    DEADLINE = "deadline"
    LINK_DOWN = "link_down"
    SERVER = "server"
    BAD_INPUT = "bad_input"
    CLOSED = "closed"


@dataclasses.dataclass
class StepResult:
    """What one step() returned."""
    motors: list                      # motor_count values in [-1, 1]; all 0 on a safe stop
    safe_stop: bool = True
    reason: str = ""                  # empty unless safe_stop
    cause: StopCause = StopCause.NONE
    status: int = 0                   # the server's FrameStatus (pb.OK, ...); 0 = UNSPECIFIED,
                                      # no answer
    confidence: float = 0.0           # from the MotorFrame, 0 when none arrived
    prediction_error: float = 0.0
    seq: int = 0                      # the SensorFrame's seq
    cycle: int = 0                    # the brain's cycle count, 0 when no answer arrived
    round_trip: float = 0.0           # seconds from step's call to its return

    @property
    def status_name(self):
        """The FrameStatus as its name, e.g. "OK" or "OUT_OF_RANGE"."""
        return pb.FrameStatus.Name(self.status)


def make_profile(robot_id, sensor_count=None, motor_count=None, *, robot_type="",
                 sensor_names=(), motor_names=(), control_hz=0.0, has_reward=False):
    """A brain.v1.RobotProfile. A count left out is the number of names given."""
    sensor_names = [str(n) for n in sensor_names]
    motor_names = [str(n) for n in motor_names]
    return pb.RobotProfile(
        robot_id=robot_id, robot_type=robot_type,
        sensor_count=len(sensor_names) if sensor_count is None else sensor_count,
        motor_count=len(motor_names) if motor_count is None else motor_count,
        sensor_names=sensor_names, motor_names=motor_names,
        control_hz=control_hz, has_reward=has_reward)


def _status_text(code, details):
    # The C++ client's GrpcStatusText: "UNAVAILABLE: failed to connect ...".
    text = code.name if isinstance(code, grpc.StatusCode) else str(code)
    return f"{text}: {details}" if details else text


def _format_duration(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:g} us"
    if seconds < 1:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds:g} s"


def _finite32(v):
    # Finite, and still finite once the wire narrows it to a float32.
    return math.isfinite(v) and abs(v) <= _FLOAT32_MAX


class _Outbox:
    """The request iterator of one stream: the Hello first, then the newest SensorFrame.

    gRPC's sending thread takes one request, writes it and only then asks for the next, so while
    a write is held up (HTTP/2 flow control) put() replaces the unsent frame with the newer one,
    whose step is the one still waiting: latest wins, and put() never blocks.
    """

    def __init__(self, hello):
        self._cv = threading.Condition()
        self._pending = hello
        self._closed = False

    def put(self, request):
        """Queues `request`; False once the stream is over (nothing was queued)."""
        with self._cv:
            if self._closed:
                return False
            self._pending = request
            self._cv.notify()
            return True

    def close(self):
        """Ends the iteration (the sending thread sees StopIteration)."""
        with self._cv:
            self._closed = True
            self._pending = None
            self._cv.notify_all()

    def __iter__(self):
        return self

    def __next__(self):
        with self._cv:
            while self._pending is None and not self._closed:
                self._cv.wait()
            if self._closed:
                raise StopIteration
            request, self._pending = self._pending, None
            return request


class Robot:
    """One robot's connection to a brain server; see the module docstring for the contract.

        with fieldbrain.Robot("brain:50051", robot_id="car-1", sensor_count=12, motor_count=4,
                              has_reward=True) as robot:
            robot.wait_connected(5)
            while True:
                r = robot.step(sensors, reward, deadline_s=0.02)
                drive(r.motors)  # zeros on a safe stop
    """

    def __init__(self, target, profile=None, *, robot_id=None, robot_type="", sensor_count=None,
                 sensor_names=(), motor_count=None, motor_names=(), control_hz=0.0,
                 has_reward=False, seed=0, fresh=False, resume_token="", credentials=None,
                 initial_backoff_s=0.05, max_backoff_s=2.0, bearer_token=""):
        """Validates the options and starts the background connection thread; never waits for
        the server.

        target: "host:port" or any gRPC target URI.
        profile: a brain.v1.RobotProfile; or leave it out and give robot_id, sensor_count and
            motor_count (or names), robot_type, control_hz, has_reward to build one.
        seed: seeds a new brain (0 = the server picks).
        fresh: the first Hello asks for a new brain even if the server keeps one for this id.
        resume_token: from an earlier Welcome (welcome().resume_token), to get that brain back
            with the first Hello; reconnects use the latest Welcome's token anyway.
        credentials: grpc.ChannelCredentials (e.g. grpc.ssl_channel_credentials()); None =
            insecure.
        bearer_token: sent as "authorization: Bearer <token>" on every stream, for a server with
            a tokens file; empty = none.
        Raises ValueError on bad options: no target, a seed outside uint64, robot_id not 1-128
        bytes, a count below 1, names given but not one per sensor/motor, not
        0 < initial_backoff_s <= max_backoff_s, fresh together with a resume_token.
        """
        if profile is None:
            if robot_id is None:
                raise ValueError("give a profile or a robot_id")
            profile = make_profile(robot_id, sensor_count, motor_count, robot_type=robot_type,
                                   sensor_names=sensor_names, motor_names=motor_names,
                                   control_hz=control_hz, has_reward=has_reward)
        else:
            copy = pb.RobotProfile()
            copy.CopyFrom(profile)
            profile = copy
        _validate(target, profile, seed, initial_backoff_s, max_backoff_s, fresh, resume_token)

        self._target = target
        self._profile = profile
        self._seed = int(seed)
        self._fresh = bool(fresh)
        self._resume_token = str(resume_token)
        metadata = []
        if bearer_token:
            metadata.append(("authorization", "Bearer " + bearer_token))
        robot_id_text = profile.robot_id
        if robot_id_text and all(0x20 <= ord(c) <= 0x7e for c in robot_id_text):
            # The key a gRPC proxy routes robots by, so a robot reaches the daemon holding its brain.
            metadata.append(("x-robot-id", robot_id_text))
        self._metadata = tuple(metadata) or None
        self._initial_backoff = float(initial_backoff_s)
        self._max_backoff = float(max_backoff_s)

        options = [
            # gRPC's own reconnect backoff (default 1 s .. 120 s) would override ours while the
            # channel is in TRANSIENT_FAILURE, so it gets the same bounds.
            ("grpc.initial_reconnect_backoff_ms", _millis(initial_backoff_s)),
            ("grpc.min_reconnect_backoff_ms", _millis(initial_backoff_s)),
            ("grpc.max_reconnect_backoff_ms", _millis(max_backoff_s)),
            # One connection per robot, even when a process runs many robots.
            ("grpc.use_local_subchannel_pool", 1),
            ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
            ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),  # 0: no limit
        ]
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._cycle = self._channel.stream_stream(
            _CYCLE_METHOD, request_serializer=pb.CycleRequest.SerializeToString,
            response_deserializer=pb.CycleResponse.FromString)

        self._close_lock = threading.Lock()  # serialises concurrent close() calls around join
        self._cv = threading.Condition()     # notified on every state change below
        self._closing = False
        self._channel_closed = False
        self._connected = False
        self._welcomed_on_stream = False
        self._presented_token = False        # the current stream's Hello carried a token
        self._resume_refused = False
        self._call = None                    # the live stream's call, to cancel it
        self._outbox = None                  # the live stream's requests
        self._welcome = None
        self._link_error = "not connected yet"
        self._link_epoch = 0                 # counts ended streams
        self._awaiting_seq = 0
        self._reply = None
        self._late_frames = 0
        self._last_seq = 0                   # the stepping thread's own

        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"fieldbrain-robot-{profile.robot_id}")
        self._thread.start()

    # -- queries, any thread ---------------------------------------------------------------

    @property
    def profile(self):
        """A copy of the RobotProfile this robot presents."""
        copy = pb.RobotProfile()
        copy.CopyFrom(self._profile)
        return copy

    def connected(self):
        """True while a Welcome has arrived on the live stream."""
        with self._cv:
            return self._connected

    def welcome(self):
        """A copy of the latest Welcome (brain.v1.Welcome), or None before the first."""
        with self._cv:
            if self._welcome is None:
                return None
            copy = pb.Welcome()
            copy.CopyFrom(self._welcome)
            return copy

    def link_error(self):
        """The status that ended the last stream ("" while connected)."""
        with self._cv:
            return self._link_error

    def late_frames(self):
        """Motor frames dropped because no step was waiting for their seq any more."""
        with self._cv:
            return self._late_frames

    def closed(self):
        with self._cv:
            return self._closing

    def wait_connected(self, timeout=None):
        """True once a Welcome has arrived on the current stream; False when that does not
        happen within `timeout` seconds (None: no limit; link_error() says why) or the robot is
        closed."""
        end = math.inf if timeout is None else time.monotonic() + max(0.0, float(timeout))
        with self._cv:
            while not self._connected and not self._closing:
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(None if left == math.inf else left)
            return self._connected and not self._closing

    # -- the control tick -------------------------------------------------------------------

    def step(self, sensors, reward=None, deadline_s=0.02):
        """One control tick; see the module docstring. Never raises.

        sensors: sensor_count numbers, each in [-1, 1] (the server rejects others, cause SERVER).
        reward: None, or a number in [-1, 1] judging the previous tick's action.
        deadline_s: seconds to wait for the answer; positive; clamped to MAX_STEP_DEADLINE_S and
            sent as SensorFrame.deadline_us (at least 1).
        """
        start = time.monotonic()
        self._last_seq += 1
        r = StepResult(motors=[0.0] * self._profile.motor_count, seq=self._last_seq)

        def finish(result):
            result.round_trip = time.monotonic() - start
            return result

        try:
            values = [float(v) for v in sensors]
        except (TypeError, ValueError) as e:
            return finish(_safe_stop(r, StopCause.BAD_INPUT, f"sensors are not numbers: {e}"))
        if len(values) != self._profile.sensor_count:
            return finish(_safe_stop(r, StopCause.BAD_INPUT,
                                     f"sensor count {len(values)} differs from the profile's "
                                     f"{self._profile.sensor_count}"))
        for i, v in enumerate(values):
            if not _finite32(v):
                return finish(_safe_stop(r, StopCause.BAD_INPUT,
                                         f"sensor {i} is {v}, not a finite float32"))
        if reward is not None:
            try:
                reward = float(reward)
            except (TypeError, ValueError) as e:
                return finish(_safe_stop(r, StopCause.BAD_INPUT, f"reward is not a number: {e}"))
            if not _finite32(reward):
                return finish(_safe_stop(r, StopCause.BAD_INPUT,
                                         f"reward is {reward}, not a finite float32"))
        try:
            deadline = float(deadline_s)
        except (TypeError, ValueError):
            deadline = math.nan
        if not deadline > 0:  # NaN too
            return finish(_safe_stop(r, StopCause.BAD_INPUT, "deadline must be positive"))
        deadline = min(deadline, MAX_STEP_DEADLINE_S)

        request = pb.CycleRequest()
        frame = request.sensors
        frame.seq = r.seq
        frame.values.extend(values)
        if reward is not None:
            frame.reward = reward
        frame.capture_time_us = time.time_ns() // 1000
        frame.deadline_us = min(max(int(deadline * 1e6), 1), 2**32 - 1)

        with self._cv:
            if self._closing:
                return finish(_safe_stop(r, StopCause.CLOSED, "client closed"))
            if not self._connected:
                return finish(_safe_stop(r, StopCause.LINK_DOWN,
                                         f"link down: {self._link_error}"))
            self._awaiting_seq = r.seq
            self._reply = None
            outbox = self._outbox
            epoch = self._link_epoch
        sent = outbox.put(request)

        link_error = ""  # set when the stream ended while this step waited
        with self._cv:
            # When put() found the stream over, its end is imminent and brings the real status.
            end = start + deadline
            while self._reply is None and self._link_epoch == epoch and not self._closing:
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            reply, self._reply = self._reply, None
            self._awaiting_seq = 0
            closed = self._closing
            if self._link_epoch != epoch:
                link_error = self._link_error
            elif not sent:
                link_error = "stream ended"

        if reply is None:
            if closed:
                return finish(_safe_stop(r, StopCause.CLOSED, "client closed"))
            if link_error:
                return finish(_safe_stop(r, StopCause.LINK_DOWN, f"link down: {link_error}"))
            return finish(_safe_stop(r, StopCause.DEADLINE,
                                     f"deadline of {_format_duration(deadline)} passed"))

        r.status = reply.status
        r.confidence = reply.confidence
        r.prediction_error = reply.prediction_error
        r.cycle = reply.cycle
        if reply.status != pb.OK:
            reason = f"server: {pb.FrameStatus.Name(reply.status)}"
            if reply.detail:
                reason += f": {reply.detail}"
            return finish(_safe_stop(r, StopCause.SERVER, reason))
        if len(reply.values) != len(r.motors):
            return finish(_safe_stop(r, StopCause.SERVER,
                                     f"server: sent {len(reply.values)} motors, profile has "
                                     f"{len(r.motors)}"))
        motors = []
        for k, v in enumerate(reply.values):
            if not math.isfinite(v):
                return finish(_safe_stop(r, StopCause.SERVER, f"server: motor {k} is not finite"))
            motors.append(min(max(v, -1.0), 1.0))  # the actuators never see more than full scale
        r.motors = motors
        r.safe_stop = False
        r.cause = StopCause.NONE
        return finish(r)

    # -- shutting down ----------------------------------------------------------------------

    def close(self):
        """Cancels the stream, stops the background thread and joins it. Idempotent. After
        close, step returns safe stops with cause CLOSED."""
        with self._close_lock:
            with self._cv:
                self._closing = True
                call, outbox = self._call, self._outbox
                self._cv.notify_all()
            if call is not None:
                call.cancel()
            if outbox is not None:
                outbox.close()
            if self._thread is not threading.current_thread():
                self._thread.join()
            if not self._channel_closed:
                self._channel_closed = True
                self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- the connection thread --------------------------------------------------------------

    def _make_hello(self):
        # Caller holds self._cv.
        request = pb.CycleRequest()
        hello = request.hello
        hello.profile.CopyFrom(self._profile)
        if self._welcome is not None and not self._resume_refused:
            # Reconnect: ask for the same brain back, with the seed it runs on.
            hello.resume_token = self._welcome.resume_token
            hello.seed = self._welcome.seed
            hello.fresh = False
        elif self._resume_token and not self._resume_refused:
            hello.resume_token = self._resume_token
            hello.seed = self._seed
            hello.fresh = False
        else:
            hello.seed = self._seed
            # fresh only until the first Welcome: a reconnect never throws a brain away.
            hello.fresh = self._fresh and self._welcome is None
        return request

    def _run(self):
        jitter = random.Random()
        backoff = self._initial_backoff
        while True:
            with self._cv:
                if self._closing:
                    return
                hello = self._make_hello()
                outbox = _Outbox(hello)
                self._outbox = outbox
                self._welcomed_on_stream = False
                self._presented_token = bool(hello.hello.resume_token)
            code, details = grpc.StatusCode.UNKNOWN, ""
            try:
                call = self._cycle(outbox, metadata=self._metadata)
                with self._cv:
                    self._call = call
                    closing = self._closing
                if closing:  # close() ran before the call existed
                    call.cancel()
                for response in call:
                    kind = response.WhichOneof("kind")
                    if kind == "welcome":
                        self._on_welcome(response.welcome)
                    elif kind == "motors":
                        self._on_motors(response.motors)
                    # anything else: a newer server's kind this client does not know
                code, details = call.code(), call.details()
            except grpc.RpcError as e:
                code, details = e.code(), e.details()
            except Exception as e:  # the stream is over whatever broke it; keep reconnecting
                code, details = grpc.StatusCode.UNKNOWN, f"{type(e).__name__}: {e}"
            outbox.close()
            was_welcomed = self._on_stream_done(code, details)

            if was_welcomed:
                backoff = self._initial_backoff  # the link worked: start over
            delay = backoff * jitter.uniform(0.8, 1.2)
            backoff = min(backoff * 2, self._max_backoff)
            end = time.monotonic() + delay
            with self._cv:
                while not self._closing:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if self._closing:
                    return

    def _on_welcome(self, welcome):
        copy = pb.Welcome()
        copy.CopyFrom(welcome)
        with self._cv:
            self._welcome = copy
            self._connected = True
            self._welcomed_on_stream = True
            self._resume_refused = False
            self._link_error = ""
            self._cv.notify_all()

    def _on_motors(self, frame):
        with self._cv:
            # Only the frame the stepping thread is waiting for counts; late ones are dropped.
            if self._awaiting_seq != 0 and frame.seq == self._awaiting_seq and self._reply is None:
                self._reply = frame
                self._cv.notify_all()
            else:
                self._late_frames += 1

    def _on_stream_done(self, code, details):
        with self._cv:
            self._connected = False
            self._link_error = _status_text(code, details)
            if (not self._welcomed_on_stream and self._presented_token
                    and code in _REFUSED_TOKEN_CODES):
                # The kept brain is not this token's (or the profile changed): later Hellos ask for
                # a new brain, which the server grants once its kept one has expired; it never
                # discards a kept brain unless asked with fresh. Cleared by the next Welcome.
                self._resume_refused = True
            self._call = None
            self._outbox = None
            self._link_epoch += 1
            self._cv.notify_all()
            return self._welcomed_on_stream


def _safe_stop(r, cause, reason):
    r.motors = [0.0] * len(r.motors)
    r.safe_stop = True
    r.cause = cause
    r.reason = reason
    return r


def _millis(seconds):
    return int(min(seconds * 1000, 2**31 - 1))


def _validate(target, p, seed, initial_backoff_s, max_backoff_s, fresh, resume_token):
    if not target:
        raise ValueError("target is empty")
    if not 0 <= seed < 2**64:
        raise ValueError("seed must be 0 (the server picks) to 2^64 - 1")
    if not 1 <= len(p.robot_id.encode("utf-8")) <= 128:
        raise ValueError("profile.robot_id must be 1-128 bytes")
    if p.sensor_count < 1 or p.motor_count < 1:
        raise ValueError("profile.sensor_count and motor_count must be >= 1")
    if len(p.sensor_names) not in (0, p.sensor_count):
        raise ValueError(f"profile has {len(p.sensor_names)} sensor names for "
                         f"{p.sensor_count} sensors")
    if len(p.motor_names) not in (0, p.motor_count):
        raise ValueError(f"profile has {len(p.motor_names)} motor names for "
                         f"{p.motor_count} motors")
    if not 0 < initial_backoff_s <= max_backoff_s:
        raise ValueError("need 0 < initial_backoff_s <= max_backoff_s")
    if fresh and resume_token:
        raise ValueError("fresh asks for a new brain, resume_token for a kept one: give one")
