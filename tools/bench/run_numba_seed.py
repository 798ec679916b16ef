#!/usr/bin/env python3
"""Runs the seed's Numba CUDA script unchanged: run_numba_seed.py SCRIPT [ARGS...].

Some numba-cuda releases register overloads for NumPy functions that newer NumPy releases removed
(on the lent H200 machine, numba-cuda's arrayobj.py does `overload(np.row_stack)` and NumPy has no
`row_stack`, so the first @cuda.jit compile dies with AttributeError). Those names serve numba-cuda
only as keys of its overload table, so this restores each missing one as an alias of its
replacement, says which on stderr, and then runs SCRIPT as __main__ with ARGS. The seed's kernel and
its timing are not touched.
"""
import os
import runpy
import sys

import numpy as np

# Removed name -> the NumPy function that replaced it.
_REMOVED_ALIASES = {"row_stack": "vstack", "trapz": "trapezoid", "in1d": "isin"}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: run_numba_seed.py SCRIPT [ARGS...]")
    restored = []
    for old, new in _REMOVED_ALIASES.items():
        if not hasattr(np, old) and hasattr(np, new):
            setattr(np, old, getattr(np, new))
            restored.append(f"np.{old} = np.{new}")
    if restored:
        print(f"run_numba_seed: NumPy {np.__version__} lacks names numba-cuda registers; "
              f"restored {', '.join(restored)}", file=sys.stderr)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python3 SCRIPT` would have it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
