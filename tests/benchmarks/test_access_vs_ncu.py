"""The access-analysis-against-Nsight-Compute table's verdicts (benchmarks/access_vs_ncu.py): no GPU."""
from benchmarks.access_vs_ncu import compare

MODEL = {"ld_sectors_per_request": 16.0, "st_sectors_per_request": 4.0, "shared_ld_conflicts": 0,
         "shared_st_conflicts": 0, "shared_ld_instructions": 1000, "shared_st_instructions": 1000,
         "shared_ld_wavefronts": 1000, "ldmatrix_conflicts": 0, "ldmatrix_instructions": 500, "l2_hit_rate": 50.0}


def _verdicts(ncu):
    return {metric: (measured, source, allowed, verdict) for metric, _, measured, source, allowed, verdict
            in compare(MODEL, ncu)}


def test_wavefronts_per_instruction_are_judged_against_the_instructions_and_the_l1_counters_only_shown():
    rows = _verdicts({"shared_ld_wavefronts": 1010.0, "shared_ld_instructions": 2000, "shared_st_conflicts": 30.0})
    assert rows["shared_ld_wavefronts"] == (1010.0, "ncu per instruction", 40.0, "agree")   # 2 % of ncu's 2000
    # the L1 counter counts cycles the addresses do not decide: printed for reference, not judged
    assert rows["shared_st_conflicts"] == (30.0, "ncu L1 counter", 20.0, "reference")
    assert _verdicts({"ldmatrix_conflicts": 10.0})["ldmatrix_conflicts"] == (10.0, "ncu per instruction", 10.0,
                                                                             "agree")


def test_sectors_within_1_percent_and_l2_within_10_points():
    rows = _verdicts({"ld_sectors_per_request": 16.1, "st_sectors_per_request": 4.1, "l2_hit_rate": 59.5})
    assert rows["ld_sectors_per_request"][3] == "agree" and rows["st_sectors_per_request"][3] == "DISAGREE"
    assert rows["l2_hit_rate"] == (59.5, "ncu", 10.0, "agree")
    assert _verdicts({"l2_hit_rate": 61.0})["l2_hit_rate"][3] == "DISAGREE"


def test_a_metric_ncu_did_not_report_has_no_verdict():
    assert _verdicts({})["ld_sectors_per_request"] == (None, "ncu", 0, "-")
