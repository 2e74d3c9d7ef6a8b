"""The reproduction's central claim follows the certified study's verdicts file, setting by setting."""

import json
from types import SimpleNamespace

import pytest

from numerics.experiments.reproduce import _verdicts
from numerics.experiments.study.certified.page import read_verdicts

MAIN = {"spectra": [[0.0, 0.0], [0.0, 0.5]], "P": 64, "k": 2}
DEPTHS = [1, 2, 4, 8]


def _setting(a, b, *, lo=0.5, hi=2.0, depths=DEPTHS, failed=(), P=64):
    return {"a": a, "b": b, "k": 2, "d": 16, "N": 32, "P": P, "depths": list(depths), "planned_depths": DEPTHS,
            "verdict": "-", "reason": "-", "alpha": (lo + hi) / 2, "alpha_lo": lo, "alpha_hi": hi,
            "failed": [list(f) for f in failed], "recipes": []}


def _judge(tmp_path, settings):
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"command": "test", "main": MAIN, "alpha_grid": [0.01, 10.0], "settings": settings}))
    return _verdicts._inverse_depth_certified_claim(SimpleNamespace(certified_verdicts=path), None)


@pytest.mark.parametrize("settings, status, reason", [
    ([_setting(0, 0), _setting(0, 0.5)], "reproduced", ""),
    ([_setting(0, 0), _setting(0, 0.5, lo=2.0, hi=5.0)], "contradicted", "(0, 0.5)"),
    ([_setting(0, 0), _setting(0, 0.5, depths=[1, 2, 4])], "inconclusive", "budget"),
    ([_setting(0, 0), _setting(0, 0.5, failed=[("nesting", 4)])], "inconclusive", "training"),
    ([_setting(0, 0), _setting(0, 0.5, lo=0.01, hi=10.0)], "inconclusive", "resolution"),
    ([_setting(0, 0)], "inconclusive", "not started"),
    # a setting at another P is not a main setting: it neither decides nor counts
    ([_setting(0, 0), _setting(0, 0.5), _setting(0, 0, lo=3.0, hi=5.0, P=128)], "reproduced", ""),
])
def test_the_central_claim_follows_each_settings_numbers(tmp_path, settings, status, reason):
    fields = _judge(tmp_path, settings)
    assert fields["status"] == status
    assert reason in fields.get("reason", "") and not fields.get("reason", "").startswith(";")
    assert len(fields["table"]) == 1 + sum(s["P"] == 64 for s in settings)


def test_without_a_verdicts_file_the_claim_is_not_tested(tmp_path):
    fields = _verdicts._inverse_depth_certified_claim(SimpleNamespace(certified_verdicts=tmp_path / "missing.json"),
                                                       None)
    assert fields["status"] == "not tested" and "missing.json" in fields["evidence"]


def test_an_unreadable_verdicts_file_names_itself(tmp_path):
    (tmp_path / "v.json").write_text("{not json")
    with pytest.raises(ValueError, match="v.json is not a certified-study verdicts file"):
        read_verdicts(tmp_path / "v.json")
