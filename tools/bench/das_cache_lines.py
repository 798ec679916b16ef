#!/usr/bin/env python3
"""Cache lines and sectors the CUDA DAS kernels' sample loads touch, counted (not timed) for each
warp shape (DasCudaTuning::lateral_lanes): the table in docs/performance.md ("General DAS, warps of
several image columns"). Pure Python, no GPU.

Model: das_cuda_check's geometry (128 elements, pitch 0.298 mm, 20 MHz, 1540 m/s, the 801 x 1701
grid of 0.05 mm over x in [-20, 20] mm and z in [5, 90] mm, F-number 1.5), plane waves evenly over
+-1.5 deg (RFdata1) or +-16 deg (PICMUS); a point loads the (I, Q) pair (8 bytes) at floor(pos) of
its element's padded channel, and a second load the pair after it; a channel starts at a random
8-byte offset within a 128-byte line. Lanes whose element is outside the F-number aperture load
nothing. For a warp (32 / L depths x L columns): distinct 128-byte lines and 32-byte sectors of
one load instruction. For a block (128 / L depths x L columns): distinct sectors of both loads
over the block's pixels, per point, i.e. what the block would fetch from L2 once per (element,
transmit) if nothing else shared its lines.

  tools/bench/das_cache_lines.py [--warps N] [--blocks N] [--seed S]
"""
import argparse
import math
import random

C, FS, PITCH, ELEMENTS, FNUMBER = 1540.0, 20e6, 0.298e-3, 128, 1.5
X0, DX, NX = -20e-3, 0.05e-3, 801
Z0, DZ, NZ = 5e-3, 0.05e-3, 1701
ELEMENT_X = [(e - (ELEMENTS - 1) / 2) * PITCH for e in range(ELEMENTS)]
CASES = (("rfdata1", 1.5), ("picmus", 16.0))
LANES = (1, 2, 4, 8, 16, 32)


def draw(rng, max_deg, depths, columns):
    """A random tile's corner, element, angle and channel offset."""
    angle = math.radians(rng.uniform(-max_deg, max_deg))
    x_reference = ELEMENT_X[0] if angle > 0 else ELEMENT_X[-1]  # the first element to fire
    return (rng.randrange(NX - columns + 1), rng.randrange(NZ - depths + 1), rng.randrange(ELEMENTS),
            math.cos(angle), math.sin(angle), x_reference, rng.randrange(16) * 8)


def sample_indices(tile, depths, columns):
    """floor(pos) of each active pixel of the tile."""
    ix0, iz0, e, ca, sa, x_reference, _ = tile
    indices = []
    for d in range(depths):
        for l in range(columns):
            x, z = X0 + (ix0 + l) * DX, Z0 + (iz0 + d) * DZ
            if abs(x - ELEMENT_X[e]) > z / (2 * FNUMBER):
                continue
            path = z * ca + (x - x_reference) * sa + math.hypot(x - ELEMENT_X[e], z)
            indices.append(math.floor(path * FS / C))
    return indices


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warps", type=int, default=20000, help="random warps a row")
    parser.add_argument("--blocks", type=int, default=4000, help="random blocks a row")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print("| L | warp | case | lines a warp's load | sectors a load | block | sectors a point (block's union) |")
    print("| ---: | --- | --- | ---: | ---: | --- | ---: |")
    for lanes in LANES:
        for name, max_deg in CASES:
            lines = sectors = loads = 0
            for _ in range(args.warps):
                tile = draw(rng, max_deg, 32 // lanes, lanes)
                indices = sample_indices(tile, 32 // lanes, lanes)
                if not indices:
                    continue
                offset = tile[-1]
                loads += 1
                lines += len({(offset + 8 * i) // 128 for i in indices})
                sectors += len({(offset + 8 * i) // 32 for i in indices})
            block_sectors = points = 0
            for _ in range(args.blocks):
                tile = draw(rng, max_deg, 128 // lanes, lanes)
                indices = sample_indices(tile, 128 // lanes, lanes)
                offset = tile[-1]
                block_sectors += len({(offset + 8 * i + k) // 32 for i in indices for k in (0, 8)})
                points += len(indices)
            print(f"| {lanes} | {32 // lanes} x {lanes} | {name} | {lines / loads:.2f} | {sectors / loads:.2f} "
                  f"| {128 // lanes} x {lanes} | {block_sectors / points:.3f} |")


if __name__ == "__main__":
    main()
