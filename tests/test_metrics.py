"""vlmlens.metrics on hand-computed cases: rates, paired bootstrap CIs, McNemar's test, tables."""
import math

import numpy as np
import pandas as pd
import pytest

from vlmlens.metrics import (add_mean_row, aggregate, align_pairs, category_table, mcnemar, mean_columns, paired_bootstrap,
                             paired_differences, rates)


def test_bootstrap_two_items_hand_computed():
    # d = [1, 0]: a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so the 2.5th and
    # 97.5th percentiles of 10,000 replicates are 0 and 1, and about half the replicates are 0.5.
    r = paired_bootstrap([1, 1], [0, 1])
    assert r["diff"] == 0.5 and r["n"] == 2 and r["n_resamples"] == 10000 and r["seed"] == 0
    assert (r["ci_low"], r["ci_high"]) == (0.0, 1.0)


def test_bootstrap_agrees_with_a_plain_numpy_percentile_bootstrap():
    "scipy's percentile bootstrap and a plain NumPy loop give the same CI up to resampling noise."
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 2, 400).astype(float), rng.integers(0, 2, 400).astype(float)
    r = paired_bootstrap(a, b, n_resamples=5000, seed=11)
    d = a - b
    reps = d[np.random.default_rng(3).integers(0, 400, size=(5000, 400))].mean(axis=1)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    assert r["ci_low"] == pytest.approx(lo, abs=0.01) and r["ci_high"] == pytest.approx(hi, abs=0.01)
    assert r["diff"] == pytest.approx(a.mean() - b.mean())
    assert paired_bootstrap(a, b, seed=1) == paired_bootstrap(a, b, seed=1)  # a fixed seed is reproducible


def test_errors_count_in_the_headline_denominator():
    rows = [{"valid": True, "score": 1.0}] * 6 + [{"valid": False, "score": 0.0}] * 2 + [{"error": "MediaError: x", "score": None}] * 2
    r = rates(rows)
    assert (r["accuracy"], r["accuracy_answered"], r["invalid_rate"], r["error_rate"]) == (0.6, 0.75, 0.25, 0.2)
    g = aggregate([{**x, "skill": k} for k, x in zip("aabbccddee", rows)], by=("skill",))
    assert [x["skill"] for x in g] == list("abcde") and g[-1]["accuracy"] == 0.0 and g[-1]["accuracy_answered"] is None


def test_mcnemar_exact_and_chi2_against_hand_values_and_scipy():
    # exact: n10 = 5, n01 = 1 -> p = 2 * (C(6,0) + C(6,1)) / 64 = 14/64
    a = [1] * 5 + [0] + [1] * 3
    b = [0] * 5 + [1] + [1] * 3
    m = mcnemar(a, b)
    assert (m["n10"], m["n01"], m["method"]) == (5, 1, "exact-binomial")
    assert m["p_value"] == pytest.approx(14 / 64)
    # chi-square with continuity correction: n10 = 20, n01 = 8 -> (12 - 1)^2 / 28
    a = [1] * 20 + [0] * 8 + [0] * 10
    b = [0] * 20 + [1] * 8 + [0] * 10
    m = mcnemar(a, b)
    assert m["method"] == "chi2-continuity" and m["statistic"] == pytest.approx(121 / 28)
    stats = pytest.importorskip("scipy.stats")
    assert m["p_value"] == pytest.approx(stats.chi2.sf(121 / 28, 1))
    assert mcnemar(a, b, exact=True)["p_value"] == pytest.approx(stats.binomtest(8, 28, 0.5).pvalue)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="same length"): paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError, match="0/1 outcomes"): mcnemar([0.3], [1])
    with pytest.raises(ValueError, match="missing values"): paired_bootstrap([1, float("nan")], [0, 0])


def test_paired_differences_and_tables():
    df = pd.DataFrame({"subset": ["m"] * 8, "language": ["en", "hi"] * 4, "align_id": ["1", "1", "2", "2", "3", "3", "4", "4"],
                       "score": [1, 0, 1, 0, 1, 1, 0, 0]})
    t = paired_differences(df, "language", "en", ["hi"], by=["subset"], mcnemar_for=True, n_resamples=500, scale=100)
    assert t.loc[0, "diff"] == 50.0 and t.loc[0, "n_pairs"] == 4 and t.loc[0, "mcnemar_n10"] == 2
    assert t.loc[0, "mcnemar_p"] == pytest.approx(0.5)
    assert len(align_pairs(df.iloc[:-1], "language", "en", "hi")) == 3  # item 4 lacks its Hindi half
    tab = mean_columns(pd.DataFrame({"x": [0.1, 0.2], "y": [0.3, float("nan")]}, index=["a", "b"]), ["x", "y"], "avg")
    assert tab.loc["a", "avg"] == pytest.approx(0.2) and math.isnan(tab.loc["b", "avg"])
    assert add_mean_row(tab).loc["Mean", "x"] == pytest.approx(0.15)
    ct = category_table(pd.DataFrame({"g": ["a", "a", "b"], "category": ["p", "q", "p"]}), by="g", categories=["p", "q"])
    assert ct.loc["a", "p"] == 0.5 and ct.loc["b", "p"] == 1.0
