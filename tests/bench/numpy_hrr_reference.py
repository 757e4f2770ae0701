#!/usr/bin/env python3
"""The seed's CPU baseline for HRR operations, in NumPy: what hrr_bench compares our CPU backend with.

The seed (../shared/seeds/004_*) binds with full complex FFTs, ifft(fft(a) * fft(b)).real, and
superposes by summing and normalising. This measures those on float32 vectors with entries
N(0, 1/D), the median of --repeats timed runs after a warm-up, and prints one line per figure:
    <name> <microseconds>
names: single_bind (one pair), binds_100 (100 pairs as one (100, D) array), superpose_1000 (1000
vectors summed and normalised), single_bind_rfft (the same bind with NumPy's real FFT, the fair
peer of a half-spectrum library).
"""
import argparse
import statistics
import sys
import time

try:
    import numpy as np
except ImportError:
    sys.exit("numpy_hrr_reference.py needs NumPy (Debian: python3-numpy)")


def median_us(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    d = args.dim

    def vecs(n):
        return (rng.standard_normal((n, d)) / np.sqrt(d)).astype(np.float32)

    a, b = vecs(1)[0], vecs(1)[0]
    a100, b100 = vecs(100), vecs(100)
    many = vecs(1000)

    def bind(x, y):
        return np.fft.ifft(np.fft.fft(x, axis=-1) * np.fft.fft(y, axis=-1), axis=-1).real.astype(np.float32)

    def bind_rfft(x, y):
        return np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(y), n=d).astype(np.float32)

    def superpose():
        s = many.sum(axis=0)
        return s / np.linalg.norm(s)

    print(f"numpy {np.__version__} D={d}")
    print(f"single_bind {median_us(lambda: bind(a, b), args.repeats):.3f}")
    print(f"binds_100 {median_us(lambda: bind(a100, b100), max(20, args.repeats // 10)):.3f}")
    print(f"superpose_1000 {median_us(superpose, max(20, args.repeats // 10)):.3f}")
    print(f"single_bind_rfft {median_us(lambda: bind_rfft(a, b), args.repeats):.3f}")


if __name__ == "__main__":
    main()
