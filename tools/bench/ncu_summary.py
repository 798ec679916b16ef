#!/usr/bin/env python3
"""One line per profiled kernel launch from Nsight Compute's raw page, for gpu-check's profile step.

  ncu --import REPORT.ncu-rep --page raw --csv > raw.csv
  tools/bench/ncu_summary.py raw.csv [more.csv ...]

Why: gpu-check times kernels, and times alone do not say what bounds them (the seed kernel at
3.3 ms a frame, 75x the seed's Numba kernel where the issue asks 100x; the DAS kernels at 1.0e12
points/s on PICMUS's size where it asks 1.2e12). The counters do: how full the multiprocessors
were, how often a scheduler issued, how busy L1, L2 and DRAM were, and what the warps waited on.

For each launch: the kernel (template arguments kept, parameters dropped), grid, registers, time,
achieved and theoretical occupancy, issue-slot use, executed IPC, the SM's and the memory's
throughput, L1, L2 and DRAM throughput, L1 and L2 hit rates, cycles between a warp's issues,
and the four largest stall reasons (warps stalled per issued instruction). A metric that the
report lacks is n/a: the names follow Nsight Compute 2025's sections (SpeedOfLight, Occupancy,
LaunchStats, WarpStateStats, SchedulerStats, MemoryWorkloadAnalysis, ComputeWorkloadAnalysis),
and a missing one costs its column, never the line. Exit status 1 when a file holds no launch.
"""
import csv
import re
import sys

# Columns: (heading, width, candidate metric names, first found wins).
COLUMNS = [
    ("regs", 4, ["launch__registers_per_thread"]),
    ("ms", 7, ["gpu__time_duration.sum"]),
    ("occ%", 5, ["sm__warps_active.avg.pct_of_peak_sustained_active"]),
    ("th.occ%", 7, ["sm__maximum_warps_per_active_cycle_pct"]),
    ("issue%", 6, ["smsp__issue_active.avg.pct_of_peak_sustained_active",
                   "sm__inst_issued.avg.pct_of_peak_sustained_active"]),
    ("IPC", 5, ["sm__inst_executed.avg.per_cycle_active", "smsp__inst_executed.avg.per_cycle_active"]),
    ("SM%", 5, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("mem%", 5, ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("L1%", 5, ["l1tex__throughput.avg.pct_of_peak_sustained_active"]),
    ("L2%", 5, ["lts__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("DRAM%", 5, ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                  "dram__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("L1hit", 5, ["l1tex__t_sector_hit_rate.pct"]),
    ("L2hit", 5, ["lts__t_sector_hit_rate.pct"]),
    ("cyc/iss", 7, ["smsp__average_warp_latency_per_inst_issued.ratio",
                    "smsp__average_warps_active_per_inst_issued.ratio"]),
]
# Stall reasons: warps stalled on the reason per issued instruction (WarpStateStats), or else
# the sampled stall counts (SourceCounters); "selected" is issuing, not waiting.
STALL_PATTERNS = [re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+)_per_issue_active\.ratio$"),
                  re.compile(r"^smsp__pcsamp_warps_issue_stalled_([a-z0-9_]+?)$")]
NOT_WAITING = {"selected", "not_issued"}
# The sampled family also counts each reason's samples of warps not issued (<reason>_not_issued),
# a subset of the reason's own: left out, not counted twice.
SUBSET_SUFFIX = "_not_issued"
TIME_UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}


def number(text):
    """A float from a cell ("1,234.5" too), or None."""
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def short_name(name):
    """'void ns::<unnamed>::seed_kernel<8, float>(Args<...>, int)' -> 'seed_kernel<8, float>':
    namespaces and the parameter list dropped, template arguments kept."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    for anonymous in ("<unnamed>::", "(anonymous namespace)::"):
        name = name.replace(anonymous, "")
    depth, start = 0, 0
    for k, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0 and name[k + 1:k + 2] == ":":
            start = k + 2  # a qualifier ends here
        elif ch == "(" and depth == 0:
            return name[start:k]
    return name[start:]


def launches(path):
    """(header, units, rows) of a raw-page CSV: the header is the first row that names "ID" and
    "Kernel Name" (lines before it, such as ==PROF== notes, are skipped); a units row follows
    when its first cell is empty."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for k, row in enumerate(rows):
        if row and row[0] == "ID" and "Kernel Name" in row:
            header = row
            body = rows[k + 1:]
            units = {}
            if body and body[0] and body[0][0] == "":
                units = dict(zip(header, body[0]))
                body = body[1:]
            return header, units, [r for r in body if len(r) == len(header)]
    return None, {}, []


def value(record, units, names):
    for name in names:
        v = number(record.get(name))
        if v is None:
            continue
        if name == "gpu__time_duration.sum":
            v *= TIME_UNITS.get(units.get(name, "nsecond"), float("nan"))  # to milliseconds
        return v
    return None


def stalls(record):
    found = {}
    for pattern in STALL_PATTERNS:
        for name, text in record.items():
            match = pattern.match(name)
            v = number(text)
            if match and v is not None and match.group(1) not in NOT_WAITING and \
                    not match.group(1).endswith(SUBSET_SUFFIX):
                found[match.group(1)] = v
        if found:  # the first family that the report holds
            break
    top = sorted(found.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{reason} {v:.2f}" for reason, v in top) if top else "n/a"


def fmt(v, width):
    if v is None:
        return "n/a".rjust(width)
    text = f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3g}"
    return text.rjust(width)


def summarize(paths, out=sys.stdout):
    """Prints the table; returns how many launches it found in each file (a list)."""
    counts = []
    heading = "  #  " + "kernel".ljust(52) + " " + "grid".ljust(14) + " " + \
        " ".join(h.rjust(w) for h, w, _ in COLUMNS) + "  stalls (warps a issue)"
    print(heading, file=out)
    for path in paths:
        header, units, rows = launches(path)
        counts.append(len(rows))
        if header is None:
            print(f"  {path}: no Nsight Compute raw-page header (\"ID\", ..., \"Kernel Name\")", file=out)
            continue
        for row in rows:
            record = dict(zip(header, row))
            print(f"  {record.get('ID', '?'):>2} " + short_name(record.get("Kernel Name", "?"))[:52].ljust(52) + " " +
                  record.get("Grid Size", "?").replace(" ", "")[:14].ljust(14) + " " +
                  " ".join(fmt(value(record, units, names), w) for _, w, names in COLUMNS) +
                  "  " + stalls(record), file=out)
    return counts


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    counts = summarize(argv[1:])
    return 0 if all(counts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
