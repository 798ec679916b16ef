#!/usr/bin/env python3
"""tools/bench/ncu_summary.py on raw-page CSVs laid out as Nsight Compute writes them (a header row
of column names, a units row, one row per launch; quoted cells, thousands separators), run by
ctest as CliNcuSummary. No GPU or Nsight Compute needed: gpu-check's profile step runs on a lent
GPU, rarely, so its parser is checked here."""
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
import ncu_summary  # noqa: E402

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "gpu__time_duration.sum", "launch__registers_per_thread",
          "sm__warps_active.avg.pct_of_peak_sustained_active", "lts__t_sector_hit_rate.pct",
          "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
          "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
          "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
          "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
          "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
          "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio"]
UNITS = ["", "", "", "", "", "", "", "", "", "", "", "usecond", "register/thread", "%", "%", "inst", "inst", "inst",
         "inst", "inst", "inst"]
SEED = ["0", "4242", "bench_seed_cuda", "127.0.0.1",
        "void usrecon::recon::seed::<unnamed>::seed_kernel<8, 1, 1, 2, 0, float, short, int>"
        "(usrecon::recon::seed::gpu::Args<float, short>, int, int, int, int, int, double *)",
        "1", "7", "(32, 4, 1)", "(38, 24, 1)", "0", "9.0", "3,361.70", "48", "41.2", "97.5", "6.25", "1.00", "0.50",
        "1.75", "0.25", "0.10"]
DAS = ["1", "4242", "das_cuda_check", "127.0.0.1", "void das_planewave_kernel<true, false>(g::Params, const float2 *)",
       "1", "7", "(128, 1, 1)", "(14, 1701, 1)", "0", "9.0", "12,900", "32", "88.0", "", "3.00", "1.00", "0.5",
       "1.0", "0.2", "0.1"]


def csv_text(rows, preamble=""):
    return preamble + "\n".join(",".join('"' + cell + '"' for cell in row) for row in rows) + "\n"


class NcuSummaryTest(unittest.TestCase):
    def summarize(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        try:
            out = io.StringIO()
            counts = ncu_summary.summarize([f.name], out)
            return counts, out.getvalue().splitlines()
        finally:
            os.unlink(f.name)

    def test_one_line_a_launch_with_units_separators_and_the_largest_stalls(self):
        counts, lines = self.summarize(csv_text([HEADER, UNITS, SEED, DAS], "==PROF== Disconnected\n"))
        self.assertEqual(counts, [2])
        self.assertEqual(len(lines), 3)  # the heading and two launches
        seed, das = lines[1], lines[2]
        # The name as the report gave it up to its parameter list: template arguments kept.
        self.assertIn("seed_kernel<8, 1, 1, 2, 0, float, short, int>", seed)
        self.assertNotIn("Args<float", seed)
        self.assertIn("(38,24,1)", seed)
        # 3,361.70 microseconds -> 3.362 ms; 12,900 us -> 12.9 ms.
        self.assertIn(" 3.362 ", seed)
        self.assertIn(" 12.9 ", das)
        # The four largest stall reasons, largest first, "selected" (issuing) left out.
        self.assertTrue(seed.endswith("long_scoreboard 6.25, wait 1.75, lg_throttle 0.50, math_pipe_throttle 0.25"), seed)
        self.assertNotIn("selected", seed)
        self.assertTrue(das.endswith("long_scoreboard 3.00, wait 1.00, lg_throttle 0.50, math_pipe_throttle 0.20"), das)
        # Metrics the report lacks are n/a, an empty cell too (the DAS row's L2 hit rate).
        self.assertIn("n/a", das)
        self.assertEqual(seed.split().count("n/a") + 1, das.split().count("n/a"))

    def test_sampled_stalls_when_the_report_has_no_per_issue_ratios(self):
        header = HEADER[:11] + ["smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
                                "smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_wait"]
        row = SEED[:11] + ["9,000", "8,000", "5,000", "700"]
        counts, lines = self.summarize(csv_text([header, [""] * len(header), row]))
        self.assertEqual(counts, [1])
        # A reason's not-issued samples are a subset of its own: not a reason of their own.
        self.assertTrue(lines[1].endswith("long_scoreboard 9000.00, wait 700.00"), lines[1])

    def test_a_file_without_the_header_counts_no_launch(self):
        counts, lines = self.summarize("==ERROR== the profiler could not read the counters\n")
        self.assertEqual(counts, [0])
        self.assertIn("no Nsight Compute raw-page header", lines[-1])
        self.assertEqual(ncu_summary.main(["ncu_summary.py", os.devnull]), 1)

    def test_short_names(self):
        self.assertEqual(ncu_summary.short_name("void k<(bool)1, std::pair<int, int>>(int, float *)"),
                         "k<(bool)1, std::pair<int, int>>")
        self.assertEqual(ncu_summary.short_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn")
        self.assertEqual(ncu_summary.short_name("void a::(anonymous namespace)::b::k<c::d>(e::f)"), "k<c::d>")


if __name__ == "__main__":
    unittest.main()
