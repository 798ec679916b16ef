#!/usr/bin/env python3
"""Times the seed's Numba CPU code N times: numba_seed_runs.py SCRIPT SOURCE_TXT OUT_NPY RUNS.

SCRIPT is ../shared/bench/seed_numba_cpu.py, loaded unchanged (runpy: its read_source and its
@nb.jit cpu_func, the seed's loop). One call compiles it (timed as 'compile+run seconds'); RUNS
more calls are timed one by one on fresh zeroed outputs ('run seconds' each, then 'median run
seconds' of them), so that bench_seed_cpu can put a median beside its own medians, measured in the
same run. The first compiled call's image is saved to OUT_NPY for the bit-exact comparison.
"""
import runpy
import statistics
import sys
import time

import numpy as np


def main():
    if len(sys.argv) != 5 or not sys.argv[4].isdigit() or int(sys.argv[4]) < 1:
        sys.exit("usage: numba_seed_runs.py SCRIPT SOURCE_TXT OUT_NPY RUNS (RUNS >= 1)")
    script, source, out_npy, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    seed = runpy.run_path(script, run_name="seed_numba_cpu")  # not __main__: its main() is not run
    data = seed["read_source"](source)
    out = np.zeros([762, 1200])
    t = time.perf_counter()
    seed["cpu_func"](out, data)
    print(f"compile+run seconds {time.perf_counter() - t:.3f}", flush=True)
    times = []
    for r in range(runs):
        out = np.zeros([762, 1200])
        t = time.perf_counter()
        seed["cpu_func"](out, data)
        times.append(time.perf_counter() - t)
        print(f"run seconds {times[-1]:.3f}", flush=True)
        if r == 0:
            np.save(out_npy, out)
    print(f"median run seconds {statistics.median(times):.3f} over {runs}")


if __name__ == "__main__":
    main()
