"""The reproduction's central claim follows the certified study's verdicts file, setting by setting."""

import json
from types import SimpleNamespace

import pytest

from numerics.experiments.criteria import Verdict
from numerics.experiments.reproduce import _verdicts
from numerics.experiments.study.certified.page import read_verdicts

MAIN = {"spectra": [[0.0, 0.0], [0.0, 0.5]], "P": 64, "k": 2}
DEPTHS = [1, 2, 4, 8, 16, 32]
#: the gain-law fit's variants, all excluding α = 1
EXCLUDING = [{"name": name, "alpha_lo": 2.0, "alpha_hi": 5.0}
             for name in ("full covariance", "diagonal weights", "Birge widening")]


def _setting(a, b, *, lo=0.45, hi=0.56, alpha=(0.6, 2.0), depths=DEPTHS, checked=DEPTHS, failed=(), P=64):
    """A verdicts-file setting whose contrast g_2/g_32 has the interval [lo, hi] (α = 1: 0.508)."""
    from numerics.experiments.criteria import law_contrast

    primary = {"name": "g2/gLmax", "estimate": "mean over seeds", "L_max": max(checked), "value": (lo + hi) / 2,
               "lo": lo, "hi": hi, "reference": law_contrast("g2/gLmax", max(checked)), "alpha_lo": alpha[0],
               "alpha_hi": alpha[1]}
    return {"a": a, "b": b, "k": 2, "d": 16, "N": 32, "P": P, "depths": list(depths), "planned_depths": DEPTHS,
            "verdict": "-", "reason": "-", "checked_depths": list(checked), "doubling_run": list(DEPTHS),
            "primary": primary, "variants": EXCLUDING, "contrasts": [primary], "failed": [list(f) for f in failed],
            "recipes": []}


def _judge(tmp_path, settings):
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"command": "test", "main": MAIN, "alpha_grid": [0.01, 10.0], "settings": settings}))
    return _verdicts._inverse_depth_certified_claim(SimpleNamespace(certified_verdicts=path), None)


@pytest.mark.parametrize("settings, status, reason", [
    ([_setting(0, 0), _setting(0, 0.5)], Verdict.REPRODUCED, ""),
    ([_setting(0, 0), _setting(0, 0.5, lo=0.60, hi=0.70)], Verdict.CONTRADICTED, "(0, 0.5)"),
    ([_setting(0, 0), _setting(0, 0.5, depths=[1, 2, 4])], Verdict.INCONCLUSIVE, "budget"),
    # the same exclusion on too few depths whose step-doubling check passed decides nothing
    ([_setting(0, 0), _setting(0, 0.5, lo=0.60, hi=0.70, checked=[1, 2, 4, 8])], Verdict.INCONCLUSIVE, "checks"),
    ([_setting(0, 0), _setting(0, 0.5, failed=[("nesting", 4)])], Verdict.INCONCLUSIVE, "training"),
    ([_setting(0, 0), _setting(0, 0.5, lo=0.2, hi=0.9, alpha=(0.01, 10.0))], Verdict.INCONCLUSIVE, "resolution"),
    ([_setting(0, 0)], Verdict.INCONCLUSIVE, "not started"),
    # a setting at another P is not a main setting: it neither decides nor counts
    ([_setting(0, 0), _setting(0, 0.5), _setting(0, 0, lo=0.60, hi=0.70, P=128)], Verdict.REPRODUCED, ""),
])
def test_the_central_claim_follows_each_settings_numbers(tmp_path, settings, status, reason):
    fields = _judge(tmp_path, settings)
    assert fields["status"] == status
    assert reason in fields.get("reason", "") and not fields.get("reason", "").startswith(";")
    assert len(fields["table"]) == 1 + sum(s["P"] == 64 for s in settings)


def test_without_a_verdicts_file_the_claim_is_not_tested(tmp_path):
    fields = _verdicts._inverse_depth_certified_claim(SimpleNamespace(certified_verdicts=tmp_path / "missing.json"),
                                                       None)
    assert fields["status"] is Verdict.NOT_TESTED and "missing.json" in fields["evidence"]


def test_an_unreadable_verdicts_file_names_itself(tmp_path):
    (tmp_path / "v.json").write_text("{not json")
    with pytest.raises(ValueError, match="v.json is not a certified-study verdicts file"):
        read_verdicts(tmp_path / "v.json")
