#!/usr/bin/env python3
"""The seed's HRR bind in PyTorch on the GPU: the peer of hrr_gpu_bench's batched binds.

The seed (../shared/seeds/004_*) moved its bind to the GPU as torch.fft.ifft(torch.fft.fft(a) *
torch.fft.fft(b)).real over (B, D) batches. This times exactly that, and the same bind with the real
FFT (rfft/irfft, the fair peer of a half-spectrum library), for B = 1 .. 10^5 at D = 1024, float32,
inputs already on the device: the median of --repeats runs of per-call CUDA events after a warm-up.
Writes the rows as JSON (--out) and prints a table.
"""
import argparse
import json
import statistics
import sys

try:
    import torch
except ImportError:
    torch = None

BATCHES = (1, 10, 100, 1000, 10000, 100000)


def time_us(fn, repeats):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if torch is None or not torch.cuda.is_available():
        sys.exit("torch_hrr_reference.py needs PyTorch with a CUDA device")
    dev = torch.device("cuda")
    d = args.dim
    rows = []
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}, D={d}")
    print(f"{'B':>7} {'seed fft us':>12} {'rfft us':>10}")
    for b in BATCHES:
        gen = torch.Generator(device=dev).manual_seed(1)
        x = torch.randn(b, d, device=dev, generator=gen) / d ** 0.5
        y = torch.randn(b, d, device=dev, generator=gen) / d ** 0.5
        seed = time_us(lambda: torch.fft.ifft(torch.fft.fft(x) * torch.fft.fft(y)).real, args.repeats)
        rfft = time_us(lambda: torch.fft.irfft(torch.fft.rfft(x) * torch.fft.rfft(y), n=d), args.repeats)
        rows.append({"batch": b, "seed_fft_us": seed, "rfft_us": rfft})
        print(f"{b:>7} {seed:>12.2f} {rfft:>10.2f}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "dim": d, "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
