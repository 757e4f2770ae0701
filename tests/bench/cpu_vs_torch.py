#!/usr/bin/env python3
"""The CPU engine beside the peer a researcher writes first, in one run: PyTorch eager on the CPU.

Runs tests/bench/torch_reference.py --device cpu (the section-4 cycle in PyTorch, batched; torch
on as many threads as there are cores) and cpu_cycle_bench's rows for the same fields and batches
(ours on one thread and on all cores), one after the other, and prints each pair with its ratio:
torch's time per cycle over ours. Issue 24 aims at 10x or more on every shape and batch. The peer
leaves out the pattern memory the engine runs every cycle (torch_reference.py says why), so the
ratios lean in torch's favour.

Needs python3-torch (deploy/install-deps.sh --bench installs it, for Debian's /usr/bin/python3).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIELD_INDEX = {"small": 0, "default": 1, "tiny": 2}  # cpu_cycle_bench's first argument


def parse_list(text, kind=str):
    return [kind(t) for t in text.split(",") if t]


def run_ours(bench, fields, batches, cores, min_time):
    """Seconds per batch of cpu_cycle_bench's rows, keyed by (field, robots, threads)."""
    rows = "|".join(f"{FIELD_INDEX[f]}/{b}/{t}" for f in fields for b in batches for t in sorted({1, cores}))
    out = subprocess.run([bench, f"--benchmark_filter=BM_CpuCycle/({rows})/", f"--benchmark_min_time={min_time}",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    seconds = {}
    by_index = {v: k for k, v in FIELD_INDEX.items()}
    for b in json.loads(out)["benchmarks"]:
        field, robots, threads = (int(x) for x in b["name"].split("/")[1:4])
        assert b["time_unit"] == "ms"
        seconds[(by_index[field], robots, threads)] = b["real_time"] / 1000.0
    return seconds


def run_torch(script, fields, batches, cycles, threads):
    """Seconds per batch of torch eager on the CPU, keyed by (field, robots)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "torch.json")
        # Timing only: torch_reference.py run on its own checks its parity and bounds.
        subprocess.run([sys.executable, script, "--device", "cpu", "--modes", "eager", "--field", ",".join(fields),
                        "--batch", ",".join(map(str, batches)), "--cycles", str(cycles), "--parity-cycles", "0",
                        "--check-cycles", "0",
                        "--threads", str(threads),
                        "--out", path], check=True, stdout=sys.stderr)
        with open(path) as f:
            report = json.load(f)
    seconds = {}
    for row in report["rows"]:
        if "ms_per_cycle" in row and row["status"] == "ok":
            seconds[(row["field"], row["batch"])] = row["ms_per_cycle"] / 1000.0
    return seconds, report.get("torch", "")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(here, "../../build/tests/bench/cpu_cycle_bench"),
                    help="the cpu_cycle_bench binary")
    ap.add_argument("--field", default="default,small,tiny", type=parse_list)
    ap.add_argument("--batch", default="1,16", type=lambda t: parse_list(t, int))
    ap.add_argument("--cycles", type=int, default=20, help="torch's timed cycles per configuration")
    ap.add_argument("--min_time", type=float, default=1.0, help="cpu_cycle_bench's seconds per row")
    args = ap.parse_args()
    for f in args.field:
        if f not in FIELD_INDEX:
            ap.error(f"unknown field {f!r}: one of {', '.join(FIELD_INDEX)}")
    cores = os.cpu_count() or 1
    try:
        import torch  # noqa: F401  (only to say clearly what is missing)
    except ImportError:
        print("cpu_vs_torch: PyTorch is not installed (deploy/install-deps.sh --bench installs python3-torch)",
              file=sys.stderr)
        return 2
    torch_s, _ = run_torch(os.path.join(here, "torch_reference.py"), args.field, args.batch, args.cycles, cores)
    ours = run_ours(args.bench, args.field, args.batch, cores, args.min_time)

    print(f"\nms per batch cycle; torch eager on {cores} cores; ratio = torch / ours")
    print(f"{'field':>8} {'robots':>6} {'torch':>10} {'ours 1 thr':>11} {'ours ' + str(cores) + ' thr':>11} "
          f"{'x (1 thr)':>10} {'x (' + str(cores) + ' thr)':>10}")
    for f in args.field:
        for b in args.batch:
            t = torch_s.get((f, b))
            one, many = ours.get((f, b, 1)), ours.get((f, b, cores))
            cell = lambda s: f"{s * 1e3:.3f}" if s else "-"
            ratio = lambda s: f"{t / s:.1f}" if t and s else "-"
            print(f"{f:>8} {b:>6} {cell(t):>10} {cell(one):>11} {cell(many):>11} {ratio(one):>10} {ratio(many):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
