#!/usr/bin/env python3
"""The fieldbrain cycle in PyTorch, batched over B robots: the peer of DESIGN.md section 8.

DESIGN.md section 8 asks the CUDA engine to be at least 10x faster than the same cycle written in
PyTorch eager and 3x faster than torch.compile of it, on the same GPU. This is that cycle: DESIGN.md
section 4 as built in gpu/model/*.h and in the order of gpu/cpu/field_pass.cc and
gpu/cpu/robot_steps.cc (the reference engine), for the same field shapes (default 64 x 32^3, small
32 x 16^3), the same robot (12 sensors, 4 motors, as tests/bench/cuda_cycle_bench.cc) and the same
batch sizes (1, 8, 64, 256, 1024). fp32 throughout (TF32 off), every tensor of every robot resident
on the device, no host synchronisation inside a cycle. Per robot, after the field pass, it is the
brain of docs/brain.md (issue 9's third and fourth sessions): open_cycle's error, confidence,
reward means and novelty, frustration and boredom (gpu/model/robot_cycle.h, exploration.h); the
features phi over their slow scale and the readout features psi = [phi_t | 4 s_t | 4 s_(t-1)];
the driver of issue 23 (gpu/model/driver.h: a TD(lambda) actor-critic on [s | s^2 | 1] whose
Gaussian step around tanh(Wd d) / tanh(2), widened by frustration, makes the motors sent, and the
undo it holds on trouble); the predictor's normalised LMS and p = tanh(Wp psi) (gpu/model/readout.h,
cpu::CloseCycle). The field readout's own actor and critic and the exploration x and noise z are
not here: nothing read them once the driver sent the motors, and the engines no longer compute them.

What differs from the engines, on purpose:
- Random draws: the start field, the sensor mixing vectors, the driver's start weights, its
  steps eps and the draws that start its undo come from torch's generators, not from Philox keyed by the robot seed, so the numbers
  differ from the engines'; only timing is compared with them.
- tanh, sigmoid and exp are torch's, not gpu/model/fastmath.h's approximations (within ~3e-7).
- psi has P + 2N entries (280 here), not the engines' P + 2 x 64 (kMaxSensors) with the entries
  past sensor_count at 0: those stay 0 and so do their weights (readout.h), so the values are the
  same; the CPU engine skips them too, the CUDA kernel computes over all 384. Less work for torch.
- No pattern memory (DESIGN.md section 5, gpu/model/memory_math.h): no context keys, writes or
  recall, and the recalled pattern P is 0, so memory channels get no 0.1 P term. The engines run
  their memory step every cycle (cpu::MemoryStep, cuda LaunchMemory): a write of the coarse
  memory pattern when |reward| > 0.1 or the error surprises, this frame's HRR key (sensor_count x
  127 sincos), its cosines with the 32 entries and the top-3 recall; only when nothing with a
  valence is recalled (pattern_active = 0) do they skip P's blend and the 0.1 P term, which is
  exact (docs/decisions.md). That step is DESIGN.md section 5, not the section-4 cycle the targets
  name, and is per-robot branching and gathers rather than tensor work. With cuda_cycle_bench's
  inputs (16 frames repeated, rewards uniform in [-1, 1]) the rules make the engines write on most
  cycles and, after the first 16, recall a stored context (pattern_active = 1) on most cycles, so
  their figures include work this peer leaves out: ratios against them lean in torch's favour.
- Sensor frames and rewards come from a ring of random frames already on the device (a robot's
  frame would arrive from the host); the CUDA engine's figure (cuda_cycle_bench batch_wall_us)
  includes its host-to-device and device-to-host copies and a synchronisation, so ratios against
  it lean in torch's favour too.

Timing: per cycle, a pair of CUDA events around the cycle (the driver's draw included), no
synchronisation between cycles; the median over --cycles cycles after --warmup cycles. torch.compile
runs with dynamic=False and fullgraph=True, one compilation per (field, batch size) after
torch._dynamo.reset(), in each of the modes asked for (--modes):
  eager        PyTorch eager, kernel by kernel
  compile      torch.compile, Inductor's default mode (fused Triton kernels, no CUDA graphs)
  compile-ro   torch.compile(mode="reduce-overhead"): the same kernels replayed as CUDA graphs, the
               fair peer of the engine's own graphs (one launch per cycle instead of dozens)
  compile-max  torch.compile(mode="max-autotune-no-cudagraphs"): autotuned kernels, no graphs
               (compilation takes minutes; not run unless asked for)
A row of compile-ro records whether Inductor really used CUDA graphs (it falls back silently when a
graph cannot be captured); the summary compares the engine with the fastest torch.compile mode.

Checks (the exit status is 1 when one fails):
- every timed configuration runs on to --check-cycles cycles (random and extreme inputs), then
  its field must be finite, content and memory within [-1.5, 1.5], dynamics within [-5, 5], the
  outputs finite and in range, and the per-robot state finite and within its clamps (the motors
  sent in [-1, 1], reward and sensor means in [-1, 1], ...);
- for torch.compile, one cycle from the same state and inputs must match eager within 1e-4
  (relative to 1 + |value|);
- parity: the vectorised cycle against a loop-by-loop scalar transcription of the CPU engine
  (plain Python floats, scalar_cycle below) on the small field for the first robots and
  --parity-cycles cycles, within 1e-4: the field, the outputs and every entry of the state.

Smoke test on any machine with torch (no GPU needed):
  python3 tests/bench/torch_reference.py --device cpu --cycles 3 --batch 2 --field small
On the GPU machine (tests/bench/run_gpu_bench.sh runs this):
  python3 tests/bench/torch_reference.py --out results.json
"""
import argparse
import importlib
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as tnf
except ImportError:  # the scalar reference and --help work without torch
    torch = None
    tnf = None

# --- The model's constants (gpu/model/field_math.h, readout.h, exploration.h, field_shape.h) ----
FIELD_BOUND = 1.5  # content and memory stay within +-1.5
DYNAMICS_BOUND = 5.0  # dynamics channels stay within +-5
IMPRINT_RADIUS = 2  # Chebyshev radius of a sensor's imprint
IMPRINT_DECAY = 0.8  # per unit of L1 distance from the site
INITIAL_SPREAD = 0.05  # start: content and memory ~ N(0, 0.05^2)
RETENTION_REST = 2.0  # start (and rest) value of the retention channels
SENSORY_GAIN = 0.05  # 0.05 S
CONTENT_GROUPS = 4
POOL_CELLS = 4  # phi pools each group to 4 x 4 x 4
FEATURES = CONTENT_GROUPS * POOL_CELLS ** 3  # P = 256
QUIET = 0.1  # |F| below this counts towards sparsity
DYNAMICS_STRENGTH = 0.3
NORM2_FLOOR = 1e-6  # the LMS step is skipped while |psi_(t-1)|^2 is below this
# Features and readouts (readout.h). psi = [phi_t | 4 s_t | 4 s_(t-1)]: here P + 2N entries, the
# engines' P + 2 kMaxSensors layout without the entries past sensor_count (always 0, weights 0).
FEATURE_SCALE_FLOOR = 1e-3  # phi divides by max(scale, 1e-3); scale <- 0.99 scale + 0.01 std_now
FRAME_GAIN = 4.0  # kFrameGain: the frame parts of psi are 4 s
# The driver (driver.h): a linear actor-critic on d = [s | s^2 | 1] that sends the motors.
DRIVER_CRITIC_RATE = 0.03  # kDriverCriticRate (per feature: over the 2N + 1 features)
DRIVER_ACTOR_RATE = 0.3  # kDriverActorRate
DRIVER_DISCOUNT = 0.98  # kDriverDiscount
DRIVER_VALUE_SHARE = 0.2  # kDriverValueShare
DRIVER_LAMBDA = 0.5  # kDriverLambda
DRIVER_SPREAD = 0.1  # kDriverSpread: the policy's spread when nothing frustrates
DRIVER_FRUSTRATION_SPREAD = 0.5  # kDriverFrustrationSpread: spread = 0.1 + 0.5 frustration
DRIVER_SQUARE_KEEP = 0.99  # kDriverSquareKeep: the advantage's running square
DRIVER_RMS_FLOOR = 0.1  # kDriverRmsFloor: actor steps x floor / max(RMS, floor)
DRIVER_ADVANTAGE_KEEP = 0.995  # kDriverAdvantageKeep: the advantage's running mean
DRIVER_WITHDRAW_GAIN = 2.0  # kDriverWithdrawGain (x frustration)
DRIVER_INITIAL_WEIGHT = 0.05  # kDriverInitialWeight
DRIVER_PREACTIVATION_BOUND = 2.0  # kDriverPreactivationBound
DRIVER_DELTA_BOUND = 10.0  # kDriverDeltaBound
DRIVER_WEIGHT_BOUND = 50.0  # kDriverWeightBound
# The driver's undo on trouble (driver.h): reward_fast below -0.3, at least 100 cycles after the
# last, with chance sigmoid(-2) a cycle; it holds -mu for 50 cycles, the actor idle.
UNDO_TROUBLE = -0.3
UNDO_GAP = 100
UNDO_CYCLES = 50
UNDO_CHANCE = 0.11920292
UNDO_SINCE_CAP = 1 << 20
# Frustration and boredom (exploration.h), which the driver reads.
NOVELTY_SCALE = 0.005  # kNoveltyScale
SPREAD_FLOOR = 0.01  # kSpreadFloor

# --- The benchmark's robot and sweep (as tests/bench/cuda_cycle_bench.cc) -----------------------
SENSORS = 12
MOTORS = 4
BATCH_SIZES = (1, 8, 64, 256, 1024)
INPUT_FRAMES = 16  # distinct random frames per robot, cycled, so inputs change every cycle
SEED = 20240601

COMPARE_TOL = 1e-4  # eager vs compile, vectorised vs scalar (why: see check_parity)
# Rough peak device memory of a cycle, in units of the batch's field bytes: the field, its
# replicate-padded copy, the Laplacian, the core and the new field in eager mode (Python frees
# each temporary when its last reference goes), fewer once Inductor fuses. Used only to skip a
# configuration that cannot fit instead of running out of memory halfway.
# torch.compile's modes (--modes names -> torch.compile's mode argument).
COMPILE_MODES = {"compile": None, "compile-ro": "reduce-overhead", "compile-max": "max-autotune-no-cudagraphs"}
ALL_MODES = ("eager",) + tuple(COMPILE_MODES)
DEFAULT_CUDA_MODES = ["eager", "compile", "compile-ro"]
# CUDA graphs keep their outputs in a private pool beside the inputs: one more field per robot.
PEAK_FIELDS = {"eager": 5.0, "compile": 3.0, "compile-ro": 4.0, "compile-max": 3.0}


class Shape:
    """gpu/model/field_shape.h: F[channel][x][y][z], z fastest."""

    def __init__(self, name, channels, n):
        self.name = name
        self.channels = channels
        self.nx = self.ny = self.nz = n
        self.content = channels // 2
        self.memory = channels // 4
        self.dynamics = channels // 4
        self.dynamics_begin = self.content + self.memory
        self.quarter = self.dynamics // 4  # dynamics channels per quarter
        self.group_size = self.content // CONTENT_GROUPS
        self.voxels = n * n * n

    def dims(self):
        return f"{self.channels}x{self.nx}x{self.ny}x{self.nz}"

    def field_bytes(self):
        return 4 * self.channels * self.voxels

    def imprint_z_range(self):
        """The z planes any imprint window can reach: sites sit in plane Z/4."""
        z = self.nz // 4
        return max(0, z - IMPRINT_RADIUS), min(self.nz, z + IMPRINT_RADIUS + 1)


SHAPES = {"default": Shape("default", 64, 32), "small": Shape("small", 32, 16), "tiny": Shape("tiny", 16, 8)}


def site_grid(n):
    g = 1
    while g * g < n:
        g += 1
    return g


def sensor_site(i, n, shape):
    """field_math.h sensor_site: sensor i of n on a g x g grid in the plane z = Z/4."""
    g = site_grid(n)
    return (int(((i % g) + 0.5) * shape.nx / g), int(((i // g) + 0.5) * shape.ny / g), shape.nz // 4)


# =================================================================================================
# The batched cycle (torch)
# =================================================================================================


def imprint_kernel(shape, n_sensors, device):
    """(N, X * Y * slab) weights 0.8^|v - site_i|_1 over |v - site_i|_inf <= 2, on the z slab the
    windows can reach. S (and E) on the slab is then one matrix product per robot: every sensor's
    share, summed, exactly as DESIGN.md defines S, without materialising it over the whole field."""
    z0, z1 = shape.imprint_z_range()
    k = torch.zeros(n_sensors, shape.nx, shape.ny, z1 - z0, dtype=torch.float32)
    for i in range(n_sensors):
        sx, sy, sz = sensor_site(i, n_sensors, shape)
        for dx in range(-IMPRINT_RADIUS, IMPRINT_RADIUS + 1):
            for dy in range(-IMPRINT_RADIUS, IMPRINT_RADIUS + 1):
                for dz in range(-IMPRINT_RADIUS, IMPRINT_RADIUS + 1):
                    x, y, z = sx + dx, sy + dy, sz + dz
                    if 0 <= x < shape.nx and 0 <= y < shape.ny and z0 <= z < z1:
                        k[i, x, y, z - z0] = IMPRINT_DECAY ** (abs(dx) + abs(dy) + abs(dz))
    return k.reshape(n_sensors, -1).to(device)


def readout_features(n_sensors):
    """R, the entries of psi = [phi_t | 4 s_t | 4 s_(t-1)] in use: P + 2N (gpu/model/robot_state.h
    lays them out at 0, P and P + kMaxSensors; the entries between are 0, their weights stay 0)."""
    return FEATURES + 2 * n_sensors


def make_constants(shape, batch, n_sensors, n_motors, device, gen):
    """What is fixed for the robots' lives: mixing vectors, imprint weights, learning."""
    mix = torch.randn(batch, n_sensors, shape.content, device=device, generator=gen)
    mix = mix / mix.norm(dim=2, keepdim=True)  # unit norm over the content channels
    return {
        "mix": mix,
        "imprint": imprint_kernel(shape, n_sensors, device),
        "learn": torch.ones(batch, 1, 1, dtype=torch.bool, device=device),  # RobotParams.learn_motors
    }


def init_state(shape, batch, n_sensors, n_motors, device, gen):
    """DESIGN.md section 4 start state; the rest as RobotState{} (gpu/model/robot_state.h) starts,
    less what only the pattern memory uses."""
    field = torch.zeros(batch, shape.channels, shape.nx, shape.ny, shape.nz, device=device)
    cm = shape.content + shape.memory
    field[:, :cm] = INITIAL_SPREAD * torch.randn(batch, cm, shape.nx, shape.ny, shape.nz, device=device,
                                                 generator=gen)
    field[:, shape.dynamics_begin:shape.dynamics_begin + shape.quarter] = RETENTION_REST
    r = readout_features(n_sensors)

    def zeros(*size):
        return torch.zeros(*size, device=device)

    return {
        "field": field,
        "cycle": torch.zeros(batch, dtype=torch.int64, device=device),
        "confidence": torch.full((batch,), 0.5, device=device),
        "psi_prev_norm2": zeros(batch),  # |psi_(t-1)|^2
        # Reward means and spread, novelty, the sensors' recent means (frustration and boredom).
        "reward_fast": zeros(batch),
        "reward_slow": zeros(batch),
        "reward_spread": zeros(batch),
        "novelty": zeros(batch),
        "novelty_slow": zeros(batch),
        "sensor_mean": zeros(batch, n_sensors),
        # Features, the motors sent last cycle and the predictor.
        "feature_scale": zeros(batch),  # 0 before the first cycle
        "psi_prev": zeros(batch, r),
        "motor_prev": zeros(batch, n_motors),  # m_(t-1): the driver's withdrawal moves along it
        "prediction": zeros(batch, n_sensors),
        "wp": zeros(batch, n_sensors, r),
        # The driver: its advantage's running square and mean, critic, actor (a newborn's small
        # seeded weights) and their traces over d = [s | s^2 | 1].
        "driver_advantage_square": zeros(batch),
        "driver_advantage_mean": zeros(batch),
        "driver_critic": zeros(batch, 2 * n_sensors + 1),
        "driver_critic_trace": zeros(batch, 2 * n_sensors + 1),
        "driver_actor": DRIVER_INITIAL_WEIGHT * torch.randn(batch, n_motors, 2 * n_sensors + 1, device=device,
                                                            generator=gen),
        "driver_actor_trace": zeros(batch, n_motors, 2 * n_sensors + 1),
        # The undo: held cycles still to send, whether motor_prev was held, cycles driven since.
        "undo_left": torch.zeros(batch, dtype=torch.int64, device=device),
        "undo_held": torch.zeros(batch, dtype=torch.bool, device=device),
        "undo_since": torch.full((batch,), UNDO_SINCE_CAP, dtype=torch.int64, device=device),
    }


def make_cycle(shape):
    """One cycle for a batch: cycle(state, consts, sensors (B, N), reward (B,), draws (B, K),
    undo_draws (B,)) -> (new state, outputs), where draws is eps, the cycle's standard normal draw
    per motor for the driver's exploration step (the engines' Domain::kDriverNoise draw), and
    undo_draws the uniform draw in (0, 1] that may start an undo (Domain::kDriverUndo). Pure: it returns new
    tensors and changes none it was given."""
    X, Y, Z = shape.nx, shape.ny, shape.nz
    cc, mm, q, gs = shape.content, shape.memory, shape.quarter, shape.group_size
    cm = cc + mm
    z0, z1 = shape.imprint_z_range()
    pool = (X // POOL_CELLS, Y // POOL_CELLS, Z // POOL_CELLS)

    def laplacian(f):
        """7-point Laplacian with replicated (clamped) borders."""
        p = tnf.pad(f, (1, 1, 1, 1, 1, 1), mode="replicate")
        return ((p[:, :, :-2, 1:-1, 1:-1] + p[:, :, 2:, 1:-1, 1:-1])
                + (p[:, :, 1:-1, :-2, 1:-1] + p[:, :, 1:-1, 2:, 1:-1])
                + (p[:, :, 1:-1, 1:-1, :-2] + p[:, :, 1:-1, 1:-1, 2:])) - 6.0 * f

    def evolve_core(f, lam, rate):
        """F' = 0.95 tanh(0.9 lam (F + k L)) for the content and memory channels; channel ch reads
        the rates of r = ch mod quarter, so the channels are viewed as (ch // q, q)."""
        b = f.shape[0]
        lap = laplacian(f).reshape(b, cm // q, q, X, Y, Z)
        core = 0.95 * torch.tanh(0.9 * lam.unsqueeze(1) * (f.reshape(b, cm // q, q, X, Y, Z)
                                                             + rate.unsqueeze(1) * lap))
        return core.reshape(b, cm, X, Y, Z)

    def cycle(st, cs, sensors, reward, draws, undo_draws):
        f = st["field"]
        b = f.shape[0]
        eps = draws  # (B, K): the driver's step

        # 1. model::open_cycle (gpu/model/robot_cycle.h): error, confidence, the reward means and
        # the novelty; then the frustration and boredom the driver reads (exploration.h).
        e = sensors - st["prediction"]
        err = e.abs().mean(1)
        recent = torch.where((st["cycle"] == 0).unsqueeze(1), sensors, st["sensor_mean"])
        change = (sensors - recent).abs().mean(1)
        sensor_mean = 0.96 * recent + 0.04 * sensors
        conf = 0.9 * st["confidence"] + 0.1 * (1.0 - torch.clamp(1.5 * err, max=1.0))
        reward_fast = 0.98 * st["reward_fast"] + 0.02 * reward
        reward_spread = 0.9995 * st["reward_spread"] + 0.0005 * (reward - st["reward_slow"]).abs()
        reward_slow = 0.9995 * st["reward_slow"] + 0.0005 * reward
        novelty = 0.9 * st["novelty"] + 0.1 * change
        novelty_slow = 0.9995 * st["novelty_slow"] + 0.0005 * novelty
        frustration = torch.clamp((reward_slow - reward_fast) / (reward_spread + SPREAD_FLOOR), 0.0, 1.0)
        boredom = torch.clamp(torch.maximum(1.0 - novelty / (novelty_slow + 1e-6),
                                            1.0 - novelty * (1.0 / NOVELTY_SCALE)), 0.0, 1.0)

        # Cross-channel terms, all from F_t (docs/decisions.md).
        content = f[:, :cc]
        memory = f[:, cc:cm]
        dyn = f[:, cm:]
        d_ret, d_dif, d_cou, d_pla = dyn[:, 0:q], dyn[:, q:2 * q], dyn[:, 2 * q:3 * q], dyn[:, 3 * q:]
        lam = 0.90 + 0.099 * torch.sigmoid(d_ret)  # (B, q, X, Y, Z)
        rate = 0.05 + 0.1 * torch.sigmoid(d_dif)
        eta = 0.1 * (0.5 + torch.sigmoid(d_pla))
        coupling = 0.2 * torch.sigmoid(d_cou) * torch.tanh(memory.mean(1, keepdim=True))
        group_mean = content.reshape(b, CONTENT_GROUPS, gs, X, Y, Z).mean(2)

        # Local activity of the content channels each dynamics channel governs (ch mod q == r),
        # and the dynamics channels of F_t+1: D <- 0.95 D + 0.05 U.
        by_r = content.reshape(b, cc // q, q, X, Y, Z)
        mag = by_r.abs()
        mean_abs = mag.mean(1)
        mean = by_r.mean(1)
        variance = torch.clamp((by_r * by_r).mean(1) - mean * mean, min=0.0)
        sparsity = (mag < QUIET).to(f.dtype).mean(1)
        target = torch.cat([
            RETENTION_REST + DYNAMICS_STRENGTH * torch.tanh(4.0 * (0.3 - mean_abs)),
            DYNAMICS_STRENGTH * torch.tanh(8.0 * (variance - 0.05)),
            DYNAMICS_STRENGTH * torch.tanh(4.0 * (mean_abs - 0.2)),
            DYNAMICS_STRENGTH * torch.tanh(4.0 * (sparsity - 0.5)),
        ], 1)
        dyn_next = torch.clamp(0.95 * dyn + 0.05 * target, -DYNAMICS_BOUND, DYNAMICS_BOUND)

        # 3. Evolve content and memory.
        core = evolve_core(f[:, :cm], lam, rate)

        # 2. Imprint, on the z slab the windows reach: S and E for both at once,
        # (B, 2, cc, N) @ (N, slab voxels); content adds 0.05 S + eta E.
        amp = torch.stack([sensors, e], 1)  # (B, 2, N)
        weights = (cs["mix"].unsqueeze(1) * amp.unsqueeze(3)).transpose(2, 3)
        s_e = torch.matmul(weights, cs["imprint"]).reshape(b, 2, cc // q, q, X, Y, z1 - z0)
        imprint = SENSORY_GAIN * s_e[:, 0] + eta[..., z0:z1].unsqueeze(1) * s_e[:, 1]

        c_next = core[:, :cc].reshape(b, cc // q, q, X, Y, Z) + coupling.unsqueeze(1)
        c_next[..., z0:z1].add_(imprint)  # in place on the slab (`+=` would add a self-copy)
        c_next = torch.clamp(c_next, -FIELD_BOUND, FIELD_BOUND).reshape(b, cc, X, Y, Z)
        # Memory channel j: 0.9 F'_j + 0.05 mean(G_(j mod 4)) (+ 0.1 P_j: P = 0, no pattern memory here).
        m_next = (0.9 * core[:, cc:].reshape(b, mm // CONTENT_GROUPS, CONTENT_GROUPS, X, Y, Z)
                  + 0.05 * group_mean.unsqueeze(1))
        m_next = torch.clamp(m_next, -FIELD_BOUND, FIELD_BOUND).reshape(b, mm, X, Y, Z)
        field_next = torch.cat([c_next, m_next, dyn_next], 1)

        # 4. Features (readout.h compute_features): A_g of F_t+1 pooled to 4x4x4, less their mean,
        # over the slow scale; then psi = [phi_t | 4 s_t | 4 s_(t-1)] (s_(t-1)'s entries are last
        # cycle's frame part of psi).
        n = sensors.shape[1]
        a = c_next.reshape(b, CONTENT_GROUPS, gs, X, Y, Z).mean(2)
        raw = tnf.avg_pool3d(a, kernel_size=pool).reshape(b, FEATURES)
        dev = raw - raw.mean(1, keepdim=True)
        std_now = torch.sqrt((dev * dev).mean(1))
        scale = torch.where(st["feature_scale"] > 0.0, 0.99 * st["feature_scale"] + 0.01 * std_now, std_now)
        phi = dev * (1.0 / torch.clamp(scale, min=FEATURE_SCALE_FLOOR)).unsqueeze(1)
        psi_prev = st["psi_prev"]
        psi = torch.cat([phi, FRAME_GAIN * sensors, psi_prev[:, FEATURES:FEATURES + n]], 1)  # (B, R)
        norm2 = (psi * psi).sum(1)

        learn = cs["learn"]  # (B, 1, 1)

        # 5. The driver (driver.h): its critic learns from this reward through the traces as they
        # were (not on the first cycle), and so does its actor unless the command judged was a held
        # undo, on the advantage over its running mean, scaled by its running RMS; a frustrated bad
        # surprise withdraws last cycle's motors along the centred frame. Then an undo under way
        # sends its held command again, one may start (the negated mean, the traces cleared), or
        # the actor acts on this frame, its spread widened by frustration, and the traces take
        # the step.
        judged_held = st["undo_held"]
        goes_on = st["undo_left"] > 0
        since = torch.where(judged_held, torch.zeros_like(st["undo_since"]),
                            torch.clamp(st["undo_since"] + 1, max=UNDO_SINCE_CAP))
        starts = ~goes_on & (reward_fast < UNDO_TROUBLE) & (since >= UNDO_GAP) & (undo_draws <= UNDO_CHANCE)
        acts = ~goes_on & ~starts
        ones = torch.ones(b, 1, device=f.device)
        d = torch.cat([sensors, sensors * sensors, ones], 1)  # (B, 2N + 1)
        s_prev = psi_prev[:, FEATURES:FEATURES + n] * (1.0 / FRAME_GAIN)
        d_prev = torch.cat([s_prev, s_prev * s_prev, ones], 1)
        w = st["driver_critic"]
        driver_delta = torch.clamp(reward + DRIVER_DISCOUNT * (w * d).sum(1) - (w * d_prev).sum(1),
                                   -DRIVER_DELTA_BOUND, DRIVER_DELTA_BOUND)
        per_feature = 1.0 / d.shape[1]
        started = st["cycle"] > 0
        learns = started & learn[:, 0, 0] & ~judged_held
        first = st["cycle"] == 1
        advantage = torch.clamp(reward + DRIVER_VALUE_SHARE * (DRIVER_DISCOUNT * (w * d).sum(1) - (w * d_prev).sum(1)),
                                -DRIVER_DELTA_BOUND, DRIVER_DELTA_BOUND)
        deviation = advantage - st["driver_advantage_mean"]
        square = torch.where(first, deviation * deviation, DRIVER_SQUARE_KEEP * st["driver_advantage_square"]
                             + (1.0 - DRIVER_SQUARE_KEEP) * deviation * deviation)
        mean = torch.where(first, advantage, DRIVER_ADVANTAGE_KEEP * st["driver_advantage_mean"]
                           + (1.0 - DRIVER_ADVANTAGE_KEEP) * advantage)
        driver_advantage_square = torch.where(learns, square, st["driver_advantage_square"])
        driver_advantage_mean = torch.where(learns, mean, st["driver_advantage_mean"])
        driver_scale = DRIVER_RMS_FLOOR / torch.clamp(torch.sqrt(driver_advantage_square), min=DRIVER_RMS_FLOOR)
        zero = torch.zeros_like(driver_delta)
        critic_step = torch.where(started, DRIVER_CRITIC_RATE * per_feature * driver_delta, zero)
        actor_step = torch.where(learns, driver_scale * DRIVER_ACTOR_RATE * per_feature * (advantage - driver_advantage_mean),
                                 zero)
        withdraw = torch.where(learns & (driver_delta < 0.0), driver_scale * DRIVER_WITHDRAW_GAIN * frustration
                               * DRIVER_ACTOR_RATE * per_feature * driver_delta, zero)
        driver_critic = torch.clamp(w + critic_step.unsqueeze(1) * st["driver_critic_trace"],
                                    -DRIVER_WEIGHT_BOUND, DRIVER_WEIGHT_BOUND)
        stepped = torch.clamp(st["driver_actor"] + actor_step[:, None, None] * st["driver_actor_trace"],
                              -DRIVER_WEIGHT_BOUND, DRIVER_WEIGHT_BOUND)
        # The centred frame, nothing for the squares, the boredom for the bias.
        centred = torch.cat([s_prev - sensor_mean, torch.zeros_like(s_prev), boredom.unsqueeze(1)], 1)  # (B, 2N + 1)
        along = st["motor_prev"].unsqueeze(2) * centred.unsqueeze(1)  # (B, K, 2N + 1)
        driver_actor = torch.clamp(stepped + withdraw[:, None, None] * along, -DRIVER_WEIGHT_BOUND, DRIVER_WEIGHT_BOUND)
        keep = DRIVER_DISCOUNT * DRIVER_LAMBDA
        driver_critic_trace = keep * st["driver_critic_trace"] + d
        preactivation = torch.matmul(driver_actor, d.unsqueeze(2)).squeeze(2)  # (B, K)
        # mu = clamp(tanh(u) / tanh(B)): the mean reaches the motor's end at the bound; the score
        # keeps tanh's slope past it (driver.h).
        squashed = torch.tanh(preactivation)
        mean_gain = 1.0 / math.tanh(DRIVER_PREACTIVATION_BOUND)
        driver_mean = torch.clamp(squashed * mean_gain, -1.0, 1.0)
        spread = (DRIVER_SPREAD + DRIVER_FRUSTRATION_SPREAD * frustration).unsqueeze(1)
        score = eps / spread * mean_gain * (1.0 - squashed * squashed)
        acting = acts[:, None, None]
        driver_actor_trace = torch.where(
            acting, keep * st["driver_actor_trace"] + score.unsqueeze(2) * d.unsqueeze(1),
            torch.where(starts[:, None, None], torch.zeros_like(st["driver_actor_trace"]), st["driver_actor_trace"]))
        # The step back towards +-DRIVER_PREACTIVATION_BOUND, along d, after the motor is sent.
        excess = preactivation - torch.clamp(preactivation, -DRIVER_PREACTIVATION_BOUND, DRIVER_PREACTIVATION_BOUND)
        bound_step = torch.where(learn[:, :, 0] & acts.unsqueeze(1), -DRIVER_ACTOR_RATE * per_feature * excess,
                                 torch.zeros_like(excess))
        driver_actor = torch.clamp(driver_actor + bound_step.unsqueeze(2) * d.unsqueeze(1), -DRIVER_WEIGHT_BOUND,
                                   DRIVER_WEIGHT_BOUND)
        motors = torch.where(goes_on.unsqueeze(1), st["motor_prev"],
                             torch.where(starts.unsqueeze(1), -driver_mean,
                                         torch.clamp(driver_mean + spread * eps, -1.0, 1.0)))
        undo_left = torch.where(goes_on, st["undo_left"] - 1,
                                torch.where(starts, torch.full_like(st["undo_left"], UNDO_CYCLES - 1),
                                            torch.zeros_like(st["undo_left"])))
        undo_held = torch.where(goes_on, judged_held, starts)
        undo_since = torch.where(goes_on, st["undo_since"], since)

        # 6. Predict: normalised LMS on psi_(t-1), then p = tanh(Wp psi_t).
        n2 = st["psi_prev_norm2"]
        inv_n2 = torch.where(n2 > NORM2_FLOOR, 1.0 / torch.clamp(n2, min=NORM2_FLOOR), torch.zeros_like(n2))
        wp = st["wp"] + 0.5 * e.unsqueeze(2) * psi_prev.unsqueeze(1) * inv_n2[:, None, None]
        prediction = torch.tanh(torch.matmul(wp, psi.unsqueeze(2)).squeeze(2))

        new_state = {
            "field": field_next,
            "cycle": st["cycle"] + 1,
            "confidence": conf,
            "psi_prev_norm2": norm2,
            "reward_fast": reward_fast,
            "reward_slow": reward_slow,
            "reward_spread": reward_spread,
            "novelty": novelty,
            "novelty_slow": novelty_slow,
            "sensor_mean": sensor_mean,
            "feature_scale": scale,
            "psi_prev": psi,
            "motor_prev": motors,
            "prediction": prediction,
            "wp": wp,
            "driver_advantage_square": driver_advantage_square,
            "driver_advantage_mean": driver_advantage_mean,
            "driver_critic": driver_critic,
            "driver_critic_trace": driver_critic_trace,
            "driver_actor": driver_actor,
            "driver_actor_trace": driver_actor_trace,
            "undo_left": undo_left,
            "undo_held": undo_held,
            "undo_since": undo_since,
        }
        outputs = {"motors": motors, "prediction": prediction, "confidence": conf, "error": err}
        return new_state, outputs

    return cycle


# =================================================================================================
# The scalar transcription (plain Python, one robot): the parity reference for the vectorised code
# =================================================================================================


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _clamp(v, bound):
    return -bound if v < -bound else (bound if v > bound else v)


def scalar_cycle(shape, field, st, params, sensors, reward, draws, undo_draw):
    """One robot's cycle, loop by loop in the order of gpu/cpu/field_pass.cc (EvolveSlab) and
    gpu/cpu/robot_steps.cc (OpenCycle, CloseCycle), in Python floats. `field` is a flat list in
    F[c][x][y][z] order; `st` a dict of numbers and lists (as init_state's, one robot, less the
    field); `params` has "sites" (N x 3), "mix" (N x content) and, optionally, "learn_motors"
    (default on); `draws` is the cycle's normal draws: the driver's eps, one per motor; `undo_draw`
    the uniform draw that may start the driver's undo.
    Returns (new field, new state, outputs)."""
    X, Y, Z = shape.nx, shape.ny, shape.nz
    cc, mm, q, gs = shape.content, shape.memory, shape.quarter, shape.group_size
    cm, C = cc + mm, shape.channels
    YZ, XYZ = Y * Z, X * Y * Z
    n = len(sensors)
    k_motors = len(draws)
    eps = draws
    sites, mix = params["sites"], params["mix"]
    per_r = cc // q

    # 1. OpenCycle (model::open_cycle), and the frustration and boredom the driver reads.
    first = st["cycle"] == 0
    errors, sensor_mean = [], []
    sum_abs = sum_change = 0.0
    for i in range(n):
        errors.append(sensors[i] - st["prediction"][i])
        sum_abs += abs(errors[i])
        recent = sensors[i] if first else st["sensor_mean"][i]
        sum_change += abs(sensors[i] - recent)
        sensor_mean.append(0.96 * recent + 0.04 * sensors[i])
    err = sum_abs / n
    conf = 0.9 * st["confidence"] + 0.1 * (1.0 - min(1.0, 1.5 * err))
    reward_fast = 0.98 * st["reward_fast"] + 0.02 * reward
    reward_spread = 0.9995 * st["reward_spread"] + 0.0005 * abs(reward - st["reward_slow"])
    reward_slow = 0.9995 * st["reward_slow"] + 0.0005 * reward
    novelty = 0.9 * st["novelty"] + 0.1 * (sum_change / n)
    novelty_slow = 0.9995 * st["novelty_slow"] + 0.0005 * novelty
    frustration = min(max((reward_slow - reward_fast) / (reward_spread + SPREAD_FLOOR), 0.0), 1.0)
    boredom = min(max(max(1.0 - novelty / (novelty_slow + 1e-6), 1.0 - novelty * (1.0 / NOVELTY_SCALE)), 0.0), 1.0)

    # 2-3. EvolveSlab, voxel by voxel.
    out = [0.0] * len(field)
    for x in range(X):
        xm, xp = max(x - 1, 0), min(x + 1, X - 1)
        near_x = [i for i in range(n) if abs(sites[i][0] - x) <= IMPRINT_RADIUS]
        for y in range(Y):
            ym, yp = max(y - 1, 0), min(y + 1, Y - 1)
            near = [i for i in near_x if abs(sites[i][1] - y) <= IMPRINT_RADIUS]
            for z in range(Z):
                zm, zp = max(z - 1, 0), min(z + 1, Z - 1)
                v = x * YZ + y * Z + z
                vals = [field[c * XYZ + v] for c in range(C)]
                mem_mean = sum(vals[cc:cm]) / mm
                gmean = [sum(vals[g * gs:(g + 1) * gs]) / gs for g in range(CONTENT_GROUPS)]
                activity = []
                for r in range(q):
                    chs = vals[r:cc:q]
                    mean = sum(chs) / per_r
                    variance = max(sum(c * c for c in chs) / per_r - mean * mean, 0.0)
                    quiet = sum(1 for c in chs if abs(c) < QUIET) / per_r
                    activity.append((sum(abs(c) for c in chs) / per_r, variance, quiet))
                lam = [0.90 + 0.099 * _sigmoid(vals[cm + r]) for r in range(q)]
                rate = [0.05 + 0.1 * _sigmoid(vals[cm + q + r]) for r in range(q)]
                coup = [0.2 * _sigmoid(vals[cm + 2 * q + r]) * math.tanh(mem_mean) for r in range(q)]
                eta = [0.1 * (0.5 + _sigmoid(vals[cm + 3 * q + r])) for r in range(q)]
                hits = [(i, IMPRINT_DECAY ** (abs(sites[i][0] - x) + abs(sites[i][1] - y) + abs(sites[i][2] - z)))
                        for i in near if abs(sites[i][2] - z) <= IMPRINT_RADIUS]
                for ch in range(cm):
                    r = ch % q
                    o = ch * XYZ
                    c0 = vals[ch]
                    lap = ((field[o + xm * YZ + y * Z + z] + field[o + xp * YZ + y * Z + z])
                           + (field[o + x * YZ + ym * Z + z] + field[o + x * YZ + yp * Z + z])
                           + (field[o + x * YZ + y * Z + zm] + field[o + x * YZ + y * Z + zp])) - 6.0 * c0
                    core = 0.95 * math.tanh(0.9 * lam[r] * (c0 + rate[r] * lap))
                    if ch < cc:
                        imprint = 0.0
                        if hits:
                            s_field = sum(mix[i][ch] * sensors[i] * d for i, d in hits)
                            e_field = sum(mix[i][ch] * errors[i] * d for i, d in hits)
                            imprint = SENSORY_GAIN * s_field + eta[r] * e_field
                        out[o + v] = _clamp(core + imprint + coup[r], FIELD_BOUND)
                    else:
                        out[o + v] = _clamp(0.9 * core + 0.05 * gmean[(ch - cc) % CONTENT_GROUPS], FIELD_BOUND)
                for d in range(shape.dynamics):
                    quarter, r = d // q, d % q
                    a_abs, a_var, a_sparse = activity[r]
                    if quarter == 0:
                        u = RETENTION_REST + DYNAMICS_STRENGTH * math.tanh(4.0 * (0.3 - a_abs))
                    elif quarter == 1:
                        u = DYNAMICS_STRENGTH * math.tanh(8.0 * (a_var - 0.05))
                    elif quarter == 2:
                        u = DYNAMICS_STRENGTH * math.tanh(4.0 * (a_abs - 0.2))
                    else:
                        u = DYNAMICS_STRENGTH * math.tanh(4.0 * (a_sparse - 0.5))
                    out[(cm + d) * XYZ + v] = _clamp(0.95 * vals[cm + d] + 0.05 * u, DYNAMICS_BOUND)

    # The summary of F_t+1 (readout.h FieldSummary).
    blocks = POOL_CELLS ** 3
    pool = [[0.0] * blocks for _ in range(CONTENT_GROUPS)]

    for x in range(X):
        for y in range(Y):
            for z in range(Z):
                v = x * YZ + y * Z + z
                block = ((x * POOL_CELLS // X) * POOL_CELLS + (y * POOL_CELLS // Y)) * POOL_CELLS + z * POOL_CELLS // Z
                for g in range(CONTENT_GROUPS):
                    a = sum(out[(g * gs + j) * XYZ + v] for j in range(gs)) / gs
                    pool[g][block] += a

    # CloseCycle: psi, the driver and its motors, prediction. psi here is the
    # compact [phi_t | 4 s_t | 4 s_(t-1)] of readout_features(n) entries (the engines' entries
    # past sensor_count are 0 with weights that stay 0).
    raw = [pool[g][blk] * blocks / shape.voxels for g in range(CONTENT_GROUPS) for blk in range(blocks)]
    mean = sum(raw) / FEATURES
    dev2_sum = sum((p - mean) ** 2 for p in raw)
    std_now = math.sqrt(dev2_sum / FEATURES)
    scale = 0.99 * st["feature_scale"] + 0.01 * std_now if st["feature_scale"] > 0.0 else std_now
    inv_scale = 1.0 / max(scale, FEATURE_SCALE_FLOOR)
    psi = [(p - mean) * inv_scale for p in raw]
    psi += [FRAME_GAIN * sensors[i] for i in range(n)]
    psi += [st["psi_prev"][FEATURES + i] for i in range(n)]
    n_psi = len(psi)
    norm2 = sum(v * v for v in psi)

    # Step 5: the driver (DriverStep).
    s_prev = [st["psi_prev"][FEATURES + i] / FRAME_GAIN for i in range(n)]
    d = list(sensors) + [v * v for v in sensors] + [1.0]
    d_prev = s_prev + [v * v for v in s_prev] + [1.0]
    n_d = len(d)
    driver_critic = list(st["driver_critic"])
    driver_actor = [list(row) for row in st["driver_actor"]]
    error_square, error_mean = st["driver_advantage_square"], st["driver_advantage_mean"]
    if st["cycle"] > 0:
        v_now = sum(driver_critic[j] * d[j] for j in range(n_d))
        v_prev = sum(driver_critic[j] * d_prev[j] for j in range(n_d))
        dd = _clamp(reward + DRIVER_DISCOUNT * v_now - v_prev, DRIVER_DELTA_BOUND)
        driver_critic = [_clamp(driver_critic[j] + DRIVER_CRITIC_RATE * dd / n_d * st["driver_critic_trace"][j],
                                DRIVER_WEIGHT_BOUND) for j in range(n_d)]
        if params.get("learn_motors", True) and not st["undo_held"]:
            first = st["cycle"] == 1
            adv = _clamp(reward + DRIVER_VALUE_SHARE * (DRIVER_DISCOUNT * v_now - v_prev), DRIVER_DELTA_BOUND)
            dev = adv - error_mean
            error_square = dev * dev if first else DRIVER_SQUARE_KEEP * error_square + (1.0 - DRIVER_SQUARE_KEEP) * dev * dev
            error_mean = adv if first else DRIVER_ADVANTAGE_KEEP * error_mean + (1.0 - DRIVER_ADVANTAGE_KEEP) * adv
            driver_scale = DRIVER_RMS_FLOOR / max(math.sqrt(error_square), DRIVER_RMS_FLOOR)
            actor_step = driver_scale * DRIVER_ACTOR_RATE * (adv - error_mean) / n_d
            withdraw = driver_scale * DRIVER_WITHDRAW_GAIN * frustration * DRIVER_ACTOR_RATE * dd / n_d if dd < 0.0 else 0.0
            centred = [s_prev[i] - sensor_mean[i] for i in range(n)] + [0.0] * n + [boredom]
            for k in range(k_motors):
                stepped = [_clamp(driver_actor[k][j] + actor_step * st["driver_actor_trace"][k][j], DRIVER_WEIGHT_BOUND)
                           for j in range(n_d)]
                driver_actor[k] = [_clamp(stepped[j] + withdraw * st["motor_prev"][k] * centred[j], DRIVER_WEIGHT_BOUND)
                                   for j in range(n_d)]
    keep = DRIVER_DISCOUNT * DRIVER_LAMBDA
    driver_critic_trace = [keep * st["driver_critic_trace"][j] + d[j] for j in range(n_d)]
    spread = DRIVER_SPREAD + DRIVER_FRUSTRATION_SPREAD * frustration
    mean_gain = 1.0 / math.tanh(DRIVER_PREACTIVATION_BOUND)
    undo_left, undo_held, undo_since = st["undo_left"], st["undo_held"], st["undo_since"]
    driver_actor_trace = [list(row) for row in st["driver_actor_trace"]]
    if undo_left > 0:  # the undo goes on
        motors = list(st["motor_prev"])
        undo_left -= 1
    else:
        undo_since = 0 if undo_held else min(undo_since + 1, UNDO_SINCE_CAP)
        undo_held = reward_fast < UNDO_TROUBLE and undo_since >= UNDO_GAP and undo_draw <= UNDO_CHANCE
        motors = []
        for k in range(k_motors):
            pre_k = sum(driver_actor[k][j] * d[j] for j in range(n_d))
            squashed_k = math.tanh(pre_k)
            mean_k = _clamp(squashed_k * mean_gain, 1.0)
            if undo_held:  # one starts: the negated mean, the traces cleared
                motors.append(-mean_k)
                driver_actor_trace[k] = [0.0] * n_d
                continue
            score = eps[k] / spread * mean_gain * (1.0 - squashed_k * squashed_k)
            driver_actor_trace[k] = [keep * st["driver_actor_trace"][k][j] + score * d[j] for j in range(n_d)]
            motors.append(_clamp(mean_k + spread * eps[k], 1.0))
            if params.get("learn_motors", True):
                excess = pre_k - min(max(pre_k, -DRIVER_PREACTIVATION_BOUND), DRIVER_PREACTIVATION_BOUND)
                bound_step = -DRIVER_ACTOR_RATE * excess / n_d
                driver_actor[k] = [_clamp(driver_actor[k][j] + bound_step * d[j], DRIVER_WEIGHT_BOUND)
                                   for j in range(n_d)]
        undo_left = UNDO_CYCLES - 1 if undo_held else 0

    # Step 6: this frame's error judges the prediction made from psi_(t-1); then predict anew.
    inv_n2 = 1.0 / st["psi_prev_norm2"] if st["psi_prev_norm2"] > NORM2_FLOOR else 0.0
    wp, prediction = [], []
    for i in range(n):
        wp.append([st["wp"][i][j] + 0.5 * errors[i] * st["psi_prev"][j] * inv_n2 for j in range(n_psi)])
        prediction.append(math.tanh(sum(wp[i][j] * psi[j] for j in range(n_psi))))
    new_state = {
        "cycle": st["cycle"] + 1, "confidence": conf, "psi_prev_norm2": norm2,
        "reward_fast": reward_fast, "reward_slow": reward_slow, "reward_spread": reward_spread,
        "novelty": novelty, "novelty_slow": novelty_slow, "sensor_mean": sensor_mean,
        "feature_scale": scale, "psi_prev": psi, "motor_prev": motors, "prediction": prediction, "wp": wp,
        "driver_advantage_square": error_square, "driver_advantage_mean": error_mean,
        "driver_critic": driver_critic, "driver_critic_trace": driver_critic_trace, "driver_actor": driver_actor,
        "driver_actor_trace": driver_actor_trace, "undo_left": undo_left, "undo_held": undo_held,
        "undo_since": undo_since,
    }
    outputs = {"motors": motors, "prediction": prediction, "confidence": conf, "error": err}
    return out, new_state, outputs


# =================================================================================================
# Running, timing, checking
# =================================================================================================


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class InputRing:
    """Random sensor frames and rewards in [-1, 1], made up front on the device; frame i % R.
    Odd frames of the extreme ring are sign(random): the bounds check sees saturated input too."""

    def __init__(self, batch, n_sensors, device, gen, extreme=False):
        self.sensors = torch.rand(INPUT_FRAMES, batch, n_sensors, device=device, generator=gen) * 2.0 - 1.0
        self.rewards = torch.rand(INPUT_FRAMES, batch, device=device, generator=gen) * 2.0 - 1.0
        if extreme:
            self.sensors[1::2] = torch.sign(self.sensors[1::2])

    def frame(self, i):
        return self.sensors[i % INPUT_FRAMES], self.rewards[i % INPUT_FRAMES]


def run_cycles(step, state, consts, ring, first, count, n_motors, gen, timer=None, graphs=False):
    """`count` cycles from cycle number `first`; with `timer`, each cycle is timed (list of ms).
    `graphs`: the step replays CUDA graphs (compile-ro). Each cycle is marked as a new step, and
    its state is cloned after the timed region: the graph pool hands a cycle's outputs to the next
    replay, which would read its inputs from memory it is writing. Without the clone the H200 run of
    2026-11-26 first failed ("accessing tensor output of CUDAGraphs that has been overwritten"),
    and with a clone only after the warm-up calls its state left its bounds. CUDA graph trees copy
    the cloned state into the graph's static inputs inside the step, as reduce-overhead does for
    every input that is not a graph output: that copy is timed, the clone is not."""
    batch = state["field"].shape[0]
    device = state["field"].device
    out = None
    for i in range(first, first + count):
        sensors, reward = ring.frame(i)
        if timer is not None:
            timer.start()
        draws = torch.randn(batch, n_motors, device=device, generator=gen)  # the driver's eps
        undo_draws = 1.0 - torch.rand(batch, device=device, generator=gen)  # in (0, 1]
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        state, out = step(state, consts, sensors, reward, draws, undo_draws)
        if timer is not None:
            timer.stop()
        if graphs:
            state, out = clone_state(state), clone_state(out)
    return state, out


class CycleTimer:
    """Per-cycle times: CUDA events (no synchronisation until the end) or, on the CPU, the clock."""

    def __init__(self, device):
        self.device = device
        self.pairs = []
        self.host = []

    def start(self):
        if self.device.type == "cuda":
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.pairs.append([ev, None])
        else:
            self.host.append([time.perf_counter(), None])

    def stop(self):
        if self.device.type == "cuda":
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.pairs[-1][1] = ev
        else:
            self.host[-1][1] = time.perf_counter()

    def milliseconds(self):
        sync(self.device)
        if self.device.type == "cuda":
            return [a.elapsed_time(b) for a, b in self.pairs]
        return [(b - a) * 1e3 for a, b in self.host]


def bounds_problems(state, out, shape):
    """What is wrong with a state after many cycles (an empty list when nothing is)."""
    problems = []
    f = state["field"]
    cm = shape.content + shape.memory
    if not bool(torch.isfinite(f).all()):
        problems.append("field has non-finite values")
    cm_max = float(f[:, :cm].abs().max())
    if cm_max > FIELD_BOUND:
        problems.append(f"content/memory reach {cm_max} > {FIELD_BOUND}")
    d_max = float(f[:, cm:].abs().max())
    if d_max > DYNAMICS_BOUND:
        problems.append(f"dynamics reach {d_max} > {DYNAMICS_BOUND}")
    for name in ("motors", "prediction"):
        t = out[name]
        if not bool(torch.isfinite(t).all()) or float(t.abs().max()) > 1.0:
            problems.append(f"{name} not finite or outside [-1, 1]")
    c = out["confidence"]
    if not bool(torch.isfinite(c).all()) or float(c.min()) < 0.0 or float(c.max()) > 1.0:
        problems.append("confidence not finite or outside [0, 1]")
    if not bool(torch.isfinite(out["error"]).all()):
        problems.append("error not finite")

    # The per-robot state: everything finite, and what the rules clamp within its clamp.
    for name, t in state.items():
        if name != "field" and t.is_floating_point() and not bool(torch.isfinite(t).all()):
            problems.append(f"state {name} has non-finite values")

    def outside(name, low, high):
        """Flags state[name] outside [low, high], give or take float32 rounding."""
        t = state[name]
        slack = 1e-5 * (1.0 + max(abs(v) for v in (low, high) if math.isfinite(v)))
        if bool(torch.isfinite(t).all()) and (float(t.min()) < low - slack or float(t.max()) > high + slack):
            problems.append(f"state {name} reaches [{float(t.min()):.4g}, {float(t.max()):.4g}], "
                            f"outside [{low}, {high}]")

    outside("motor_prev", -1.0, 1.0)
    outside("confidence", 0.0, 1.0)
    for name in ("driver_critic", "driver_actor"):
        outside(name, -DRIVER_WEIGHT_BOUND, DRIVER_WEIGHT_BOUND)
    # Means of rewards and sensors in [-1, 1] stay in [-1, 1]; mean distances between two such
    # values (the reward spread, the novelties) in [0, 2].
    for name in ("reward_fast", "reward_slow", "sensor_mean"):
        outside(name, -1.0, 1.0)
    for name in ("reward_spread", "novelty", "novelty_slow"):
        outside(name, 0.0, 2.0)
    outside("feature_scale", 0.0, math.inf)
    outside("psi_prev_norm2", 0.0, math.inf)
    return problems


def max_difference(a, b):
    """Largest |a - b| / (1 + |b|) over matching entries of two (state, outputs) pairs of tensor
    dicts: absolute for the field and the outputs (|b| <= 1.5), relative for sums such as
    |phi|^2 (~256, where float32 summation order alone moves the last digits by ~1e-4)."""
    worst = 0.0
    for da, db in zip(a, b):
        for key in da:
            x, y = da[key].float(), db[key].float()
            worst = max(worst, float(((x - y).abs() / (1.0 + y.abs())).max()))
    return worst


def cudagraph_skips():
    """How often Inductor has fallen back from CUDA graphs in this process (0 where unknown)."""
    try:
        counters = importlib.import_module("torch._dynamo.utils").counters
        return int(sum(counters["inductor"].get(k, 0) for k in ("cudagraph_skips",)))
    except (ImportError, AttributeError, KeyError):
        return 0


def clone_state(state):
    return {k: v.clone() for k, v in state.items()}


def check_parity(device, robots, cycles, log):
    """The vectorised cycle against scalar_cycle, robot by robot, on the small field: the field,
    the outputs (absolute differences) and every entry of the per-robot state (relative to
    1 + |value|, as max_difference: |psi|^2 is a sum of ~300 terms of order 1).
    Tolerance 1e-4: both compute the same formulas; they differ by float32 vs float64 rounding,
    summation order and torch's tanh/sigmoid (a few 1e-7 per step), through contractive maps; phi
    divides by the feature scale (the pooled std, ~1e-2), which scales such differences up by ~1e2
    at most. A wrong index, neighbour, channel or term of the field pass, the features or the
    motors moves values by >= 1e-3. Some terms stay too small for this tolerance in a few cycles
    (boredom while random inputs keep the novelty high): those are checked by reading."""
    shape = SHAPES["small"]
    gen = torch.Generator(device=device).manual_seed(SEED + 1)
    consts = make_constants(shape, robots, SENSORS, MOTORS, device, gen)
    state = init_state(shape, robots, SENSORS, MOTORS, device, gen)
    ring = InputRing(robots, SENSORS, device, gen)
    step = make_cycle(shape)
    params = [{"sites": [sensor_site(i, SENSORS, shape) for i in range(SENSORS)],
               "mix": consts["mix"][b].tolist()} for b in range(robots)]
    fields = [state["field"][b].reshape(-1).tolist() for b in range(robots)]
    scalar = [{k: v[b].tolist() for k, v in state.items() if k != "field"} for b in range(robots)]
    worst = 0.0
    for t in range(cycles):
        sensors, reward = ring.frame(t)
        draws = torch.randn(robots, MOTORS, device=device, generator=gen)
        undo_draws = 1.0 - torch.rand(robots, device=device, generator=gen)
        state, out = step(state, consts, sensors, reward, draws, undo_draws)
        for b in range(robots):
            fields[b], scalar[b], s_out = scalar_cycle(shape, fields[b], scalar[b], params[b], sensors[b].tolist(),
                                                       float(reward[b]), draws[b].tolist(), float(undo_draws[b]))
            ref_field = torch.tensor(fields[b], dtype=torch.float64)
            worst = max(worst, float((state["field"][b].reshape(-1).double().cpu() - ref_field).abs().max()))
            for key in ("motors", "prediction"):
                ref = torch.tensor(s_out[key], dtype=torch.float64)
                worst = max(worst, float((out[key][b].double().cpu() - ref).abs().max()))
            for key in ("confidence", "error"):
                worst = max(worst, abs(float(out[key][b]) - s_out[key]))
            for key, value in scalar[b].items():  # the whole per-robot state, relative to 1 + |value|
                ref = torch.tensor(value, dtype=torch.float64)
                got = state[key][b].double().cpu()
                worst = max(worst, float(((got - ref).abs() / (1.0 + ref.abs())).max()))
        log(f"  parity cycle {t + 1}: max |torch - scalar| so far {worst:.3g}")
    return worst


def measure(shape, batch, mode, args, device, deadline):
    """Times one (field, batch, mode) and checks it; returns the row for the table and JSON."""
    compiled = mode in COMPILE_MODES
    graphs = mode == "compile-ro"
    row = {"field": shape.name, "shape": shape.dims(), "batch": batch, "mode": mode,
           "compile_mode": (COMPILE_MODES[mode] or "default") if compiled else None}
    if deadline is not None and time.monotonic() > deadline:
        row["status"] = "skipped: time budget (--deadline-s) spent"
        return row
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        need = PEAK_FIELDS[mode] * shape.field_bytes() * batch
        if need > 0.9 * free:
            row["status"] = f"skipped: needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
            return row
    gen = torch.Generator(device=device).manual_seed(SEED)
    consts = make_constants(shape, batch, SENSORS, MOTORS, device, gen)
    state = init_state(shape, batch, SENSORS, MOTORS, device, gen)
    ring = InputRing(batch, SENSORS, device, gen, extreme=True)
    eager = make_cycle(shape)
    step = eager
    skips_before = cudagraph_skips()
    if compiled:
        # A fresh compilation per configuration: no recompile limit, no automatic dynamic shapes.
        importlib.import_module("torch._dynamo").reset()
        step = torch.compile(eager, mode=COMPILE_MODES[mode], dynamic=False, fullgraph=True)
        t0 = time.perf_counter()
        # compiles; with CUDA graphs the first calls warm up and record, later ones replay
        state, _ = run_cycles(step, state, consts, ring, 0, 3 if graphs else 1, MOTORS, gen, graphs=graphs)
        sync(device)
        row["compile_s"] = round(time.perf_counter() - t0, 2)
    done = (3 if graphs else 1) if compiled else 0
    state, _ = run_cycles(step, state, consts, ring, done, args.warmup, MOTORS, gen, graphs=graphs)
    done += args.warmup
    sync(device)
    timer = CycleTimer(device)
    state, out = run_cycles(step, state, consts, ring, done, args.cycles, MOTORS, gen, timer, graphs=graphs)
    done += args.cycles
    if graphs:
        skipped = cudagraph_skips() - skips_before
        row["cuda_graphs"] = "used" if skipped == 0 else f"not used (Inductor skipped them {skipped}x)"
    ms = timer.milliseconds()
    median = statistics.median(ms)
    row.update({"ms_per_cycle": median, "mean_ms": statistics.fmean(ms), "min_ms": min(ms), "cycles": len(ms),
                "robot_cycles_per_s": batch / (median * 1e-3), "us_per_robot_cycle": median * 1e3 / batch})

    # Correctness: on to --check-cycles cycles, then bounds; compile against eager for one cycle.
    if done < args.check_cycles:
        state, out = run_cycles(step, state, consts, ring, done, args.check_cycles - done, MOTORS, gen,
                                graphs=graphs)
        done = args.check_cycles
    problems = bounds_problems(state, out, shape)
    row["checked_cycles"] = done
    if compiled:
        sensors, reward = ring.frame(done)
        draws = torch.randn(batch, MOTORS, device=device, generator=gen)
        undo_draws = 1.0 - torch.rand(batch, device=device, generator=gen)
        # Both copies before the compiled call: a graph replay may reuse the memory of `state`.
        for_compiled, for_eager = clone_state(state), clone_state(state)
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        compiled_out = step(for_compiled, consts, sensors, reward, draws, undo_draws)
        diff = max_difference(compiled_out, eager(for_eager, consts, sensors, reward, draws, undo_draws))
        row["compile_vs_eager_max_diff"] = diff
        if not diff <= COMPARE_TOL:
            problems.append(f"compiled cycle differs from eager by {diff} > {COMPARE_TOL}")
    row["status"] = "ok" if not problems else "FAILED: " + "; ".join(problems)
    return row


TABLE_HEADER = (f"{'field':>8} {'shape':>12} {'batch':>6} {'mode':>11} {'ms/cycle':>12} {'robot-cycles/s':>16} "
                f"{'us/robot-cyc':>14} {'compile s':>10}  status")


def print_row(row):
    lead = f"{row['field']:>8} {SHAPES[row['field']].dims():>12} {row['batch']:>6} {row['mode']:>11}"
    if "ms_per_cycle" in row:
        compile_s = f"{row['compile_s']:.1f}" if "compile_s" in row else "-"
        graphs = f" (CUDA graphs {row['cuda_graphs']})" if "cuda_graphs" in row else ""
        print(f"{lead} {row['ms_per_cycle']:>12.4f} {row['robot_cycles_per_s']:>16.1f} "
              f"{row['us_per_robot_cycle']:>14.2f} {compile_s:>10}  {row['status']}{graphs}", flush=True)
    else:
        print(f"{lead} {'-':>12} {'-':>16} {'-':>14} {'-':>10}  {row['status']}", flush=True)


def write_json(path, report):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, path)  # whole or nothing, even if the run is cut off


def parse_list(text, allowed=None, kind=str):
    items = [kind(t) for t in text.split(",") if t.strip()]
    if allowed is not None:
        for t in items:
            if t not in allowed:
                raise argparse.ArgumentTypeError(f"{t!r}: choose from {', '.join(allowed)}")
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--field", default="default,small", type=lambda t: parse_list(t, SHAPES),
                    help="comma list of default, small (default: both)")
    ap.add_argument("--batch", "--batches", dest="batches", default=",".join(map(str, BATCH_SIZES)),
                    type=lambda t: parse_list(t, kind=int), help="comma list of batch sizes")
    ap.add_argument("--modes", default=None, type=lambda t: parse_list(t, ALL_MODES),
                    help=f"comma list of {', '.join(ALL_MODES)} (default: {','.join(DEFAULT_CUDA_MODES)} on cuda, "
                         "eager on cpu); see the header for what each is")
    ap.add_argument("--cycles", type=int, default=20, help="timed cycles per configuration (median)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed cycles before timing")
    ap.add_argument("--check-cycles", type=int, default=100, help="cycles before the bounds check")
    ap.add_argument("--parity-cycles", type=int, default=3, help="cycles of the parity check (0: none)")
    ap.add_argument("--parity-robots", type=int, default=2, help="robots of the parity check")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no configuration after this many seconds (the rest are skipped, reported)")
    ap.add_argument("--out", default=None, help="write the results as JSON here (rewritten after each row)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch's CPU threads (torch.set_num_threads; default: torch's own choice)")
    args = ap.parse_args()

    if torch is None:
        sys.exit("torch_reference.py needs PyTorch (import torch failed)")
    if args.cycles < 1 or args.warmup < 0:
        sys.exit("--cycles must be >= 1 and --warmup >= 0")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda, but torch sees no CUDA device (use --device cpu for the smoke test)")
    modes = args.modes or (DEFAULT_CUDA_MODES if device.type == "cuda" else ["eager"])
    if device.type != "cuda" and "compile-ro" in modes:
        sys.exit("compile-ro (CUDA graphs) needs --device cuda")
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.monotonic()
    deadline = started + args.deadline_s if args.deadline_s else None
    torch.set_float32_matmul_precision("highest")  # fp32: no TF32 in the imprint's matrix product
    torch.backends.cudnn.allow_tf32 = False

    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {device_name}; fp32; {SENSORS} sensors, {MOTORS} motors; "
          f"modes {', '.join(modes)}; {torch.get_num_threads()} CPU threads", flush=True)
    report = {"device": device_name, "torch": torch.__version__, "dtype": "float32", "sensors": SENSORS,
              "motors": MOTORS, "modes": modes, "cpu_threads": torch.get_num_threads(), "warmup": args.warmup,
              "cycles": args.cycles,
              "timing": "median of per-cycle CUDA events" if device.type == "cuda" else "median of per-cycle clock",
              "checks": {}, "rows": []}
    failed = False

    with torch.inference_mode():
        if args.parity_cycles > 0:
            print(f"parity: vectorised vs scalar cycle, small field, {args.parity_robots} robots, "
                  f"{args.parity_cycles} cycles", flush=True)
            worst = check_parity(device, args.parity_robots, args.parity_cycles, lambda m: print(m, flush=True))
            ok = worst <= COMPARE_TOL
            failed |= not ok
            report["checks"]["parity_max_diff"] = worst
            report["checks"]["parity"] = "ok" if ok else f"FAILED: {worst} > {COMPARE_TOL}"
            print(f"parity: {report['checks']['parity']} (max diff {worst:.3g})", flush=True)
            write_json(args.out, report)

        print(TABLE_HEADER, flush=True)
        for name in args.field:
            for mode in modes:
                for batch in args.batches:
                    try:
                        row = measure(SHAPES[name], batch, mode, args, device, deadline)
                    except torch.cuda.OutOfMemoryError as e:
                        row = {"field": name, "batch": batch, "mode": mode,
                               "status": f"skipped: out of memory ({str(e).splitlines()[0]})"}
                    except Exception as e:  # a failed configuration is reported, the sweep goes on
                        row = {"field": name, "batch": batch, "mode": mode,
                               "status": f"FAILED: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
                    failed |= row["status"].startswith("FAILED")
                    report["rows"].append(row)
                    print_row(row)
                    write_json(args.out, report)
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
    print("\nall configurations:\n" + TABLE_HEADER)
    for row in report["rows"]:
        print_row(row)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    report["ok"] = not failed
    write_json(args.out, report)
    print(f"done in {report['elapsed_s']} s: {'all checks passed' if not failed else 'SOME CHECKS FAILED'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
