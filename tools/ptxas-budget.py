#!/usr/bin/env python3
"""The registers and spills of the kernels whose speed was measured on an H200, held to what they
were then: compiles recon/cuda/das_cuda.cu and recon/cuda/seed_cuda.cu for sm_90 with the project's
CUDA flags (ptxas -v; no GPU needed), and fails when a budgeted kernel takes more registers than
its budget or spills at all. Why: ptxas's allocation moves with changes far from the loop (reading
the image the launches before left, a runtime shift in the thread's pixel) and a GPU run is rare;
a spill or lower occupancy found only there costs a measurement. Run by ctest (ReconPtxasBudget).

  tools/ptxas-budget.py [--nvcc PATH] [--source-dir DIR] [-v]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (source, demangled-name pattern, most registers): every kernel of the source the pattern
# matches is held to it, with no spill stores; each pattern must match at least one kernel.
# The DAS kernels' registers as the H200 measured them (docs/performance.md; since fe94cce). The
# seed kernel's default split (P = 8, one lateral lane, one pair split, two pairs a step) for
# 16-bit frames as it compiles since 8c88e8e (the odd-pair fold): 48 and 52, fewer than the 56 of
# the measured e7415f6.
BUDGET = [
    ("recon/cuda/das_cuda.cu", r"\bdas_kernel\(", 32),
    ("recon/cuda/das_cuda.cu", r"\bdas_planewave_kernel<(true|false), false>", 32),
    ("recon/cuda/das_cuda.cu", r"\bdas_planewave_kernel<(true|false), true>", 40),
    ("recon/cuda/seed_cuda.cu", r"\bseed_kernel<8, 1, 1, 2, 0, float, short, int>", 48),
    ("recon/cuda/seed_cuda.cu", r"\bseed_kernel<8, 1, 1, 2, 0, double, short, int>", 52),
]

FLAGS = ["-std=c++20", "-O3", "-DNDEBUG", "--fmad=false", "-Xcompiler=-ffp-contract=off",
         "-arch=sm_90", "-cubin", "-Xptxas", "-v"]


def kernels_of(nvcc, source_dir, source):
    """[(demangled name, registers, spill store bytes)] of every entry function in source."""
    with tempfile.TemporaryDirectory() as tmp:
        # usrecon/kernels/config.hpp as CMake writes it for a build with CUDA (no build tree here).
        config_in = os.path.join(source_dir, "kernels/include/usrecon/kernels/config.hpp.in")
        os.makedirs(os.path.join(tmp, "usrecon/kernels"))
        with open(config_in) as template, open(os.path.join(tmp, "usrecon/kernels/config.hpp"), "w") as config:
            config.write(template.read().replace("#cmakedefine USRECON_HAVE_CUDA 1", "#define USRECON_HAVE_CUDA 1"))
        cmd = [nvcc, *FLAGS, "-I" + tmp, "-I" + os.path.join(source_dir, "kernels/include"),
               "-I" + os.path.join(source_dir, "recon/include"), os.path.join(source_dir, source),
               "-o", os.path.join(tmp, "out.cubin")]
        run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"ptxas-budget: nvcc failed on {source}:\n{run.stderr}")
    found, name, spill = [], None, None
    for line in run.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name, spill = m.group(1), None
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and name:
            spill = int(m.group(1))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            found.append((name, int(m.group(1)), spill if spill is not None else 0))
            name = None
    filt = shutil.which("c++filt")
    if filt and found:
        names = subprocess.run([filt], input="\n".join(n for n, _, _ in found), capture_output=True,
                               text=True, check=True).stdout.splitlines()
        found = [(d, r, s) for d, (_, r, s) in zip(names, found)]
    return found


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    parser.add_argument("--source-dir", default=os.path.dirname(here))
    parser.add_argument("-v", "--verbose", action="store_true", help="print every budgeted kernel")
    args = parser.parse_args()
    if not os.access(args.nvcc, os.X_OK):
        sys.exit(f"ptxas-budget: no nvcc at {args.nvcc}")
    if not shutil.which("c++filt"):
        sys.exit("ptxas-budget: c++filt (binutils) is needed to read the kernels' names")
    failures, checked = [], 0
    for source in sorted({s for s, _, _ in BUDGET}):
        kernels = kernels_of(args.nvcc, args.source_dir, source)
        for _, pattern, most in (b for b in BUDGET if b[0] == source):
            matched = [k for k in kernels if re.search(pattern, k[0])]
            if not matched:
                failures.append(f"{source}: no kernel matches {pattern!r} (renamed? update the budget)")
            for name, regs, spill in matched:
                checked += 1
                ok = regs <= most and spill == 0
                if args.verbose or not ok:
                    print(f"{'ok ' if ok else 'BAD'} {regs:3d} registers (budget {most}), {spill} bytes spilled: {name}")
                if not ok:
                    failures.append(f"{name}: {regs} registers (budget {most}), {spill} bytes of spill stores")
    for f in failures:
        print("ptxas-budget: " + f, file=sys.stderr)
    print(f"ptxas-budget: {checked} kernels checked, {len(failures)} over budget or missing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
