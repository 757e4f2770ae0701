"""fieldbrain: the Python robot side of a fieldbrain brain server (client/python/README.md).

    import fieldbrain
    with fieldbrain.Robot("brain:50051", robot_id="car-1", sensor_count=12, motor_count=4) as robot:
        robot.wait_connected(5)
        r = robot.step(sensors, reward=None, deadline_s=0.02)   # r.motors: zeros on a safe stop

Needs the modules generated from proto/brain/v1 (client/python/generate_stubs.sh); `pb` is
brain.v1.brain_pb2, for RobotProfile, Welcome and FrameStatus.
"""
from .robot import (
    KEEPALIVE_TIME_MS,
    KEEPALIVE_TIMEOUT_MS,
    MAX_STEP_DEADLINE_S,
    Robot,
    StepResult,
    StopCause,
    make_profile,
    pb,
)

FrameStatus = pb.FrameStatus
RobotProfile = pb.RobotProfile
Welcome = pb.Welcome

__version__ = "0.1.0"

__all__ = [
    "FrameStatus",
    "KEEPALIVE_TIME_MS",
    "KEEPALIVE_TIMEOUT_MS",
    "MAX_STEP_DEADLINE_S",
    "Robot",
    "RobotProfile",
    "StepResult",
    "StopCause",
    "Welcome",
    "make_profile",
    "pb",
]
