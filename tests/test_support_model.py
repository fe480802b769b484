"""The support check's decision path: signals -> feature vector -> verdict (rules or calibrated model).

Sentences are written here about a made-up lending library, not taken from the bundled corpus.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rag.calibration import Model, from_json
from rag.support import decision
from rag.support.check import signals
from rag.support.decision import FEATURES, Signals, active_model, decide, rules, stored_model, vector
from tests.blocks import lending_block

_block = lending_block


def _features(s: Signals) -> dict[str, float]:
    return dict(zip(FEATURES, vector(s, min_coverage=0.5), strict=True))


SPAN = "Members may borrow up to 8 books at a time, and reference books cannot be taken home."


def test_signals_of_a_verbatim_sentence_fire_nothing() -> None:
    measured = signals(SPAN, [SPAN], [_block(SPAN)])
    assert measured.coverage == 1.0 and measured.span_coverage == 1.0 and measured.unfound == 0
    fired = {k: v for k, v in _features(measured).items() if v and k not in {"coverage", "stem_coverage"}}
    # word_meaning is a similarity: 1.0 when every word aligned (or nothing was encoded)
    assert set(fired) <= {"aligned_share", "span_coverage", "terms", "word_meaning"}
    assert rules(measured, 1, min_coverage=0.5).issue is None


def test_signals_of_a_negation_flip_and_a_changed_figure() -> None:
    sentence = "Members may borrow up to 9 books at a time, and reference books can be taken home."
    measured = signals(sentence, [SPAN], [_block(SPAN)])
    features = _features(measured)
    assert features["negation_flip"] == 1.0
    assert features["missing_figures"] == 1.0
    verdict = rules(measured, 1, min_coverage=0.5)
    assert verdict.issue is not None and verdict.issue.kind == "contradiction" and verdict.contradicts


def test_signals_of_a_lead_in_naming_the_cited_document() -> None:
    sentence = f"According to the library lending rules, {SPAN[0].lower()}{SPAN[1:]}"
    measured = signals(sentence, [SPAN], [_block(SPAN)])
    assert measured.lead_in and measured.core.startswith("Members may borrow")
    assert _features(measured)["lead_in"] == 1.0


def test_vector_scales_counts_and_marks_each_kind_once() -> None:
    s = Signals(
        core="x",
        coverage=0.8,
        terms=40,
        unfound=2,
        substituted=("tutor", "dean", "noun"),
        frames=(("narrowed", "campus", "district"), ("negation", "negates", "renew")),
    )
    f = _features(s)
    assert len(vector(s, min_coverage=0.5)) == len(FEATURES)
    assert f["terms"] == 1.0 and f["unfound"] == pytest.approx(0.4)
    assert f["substituted_noun"] == 1.0 and f["substituted_name"] == 0.0
    assert f["frame_narrowed"] == 1.0 and f["frame_negation"] == 1.0 and f["frame_swap"] == 0.0
    assert f["low_coverage"] == 0.0 and _features(Signals(core="x", coverage=0.3))["low_coverage"] == 1.0


def test_rules_take_the_first_rule_that_fires_in_their_order() -> None:
    both = Signals(core="x", coverage=0.9, new_name="Leeds", negation_flip="negates")
    verdict = rules(both, 2, min_coverage=0.5)
    assert verdict.issue is not None and verdict.issue.kind == "other_subject" and not verdict.contradicts
    assert "[2]" in verdict.issue
    frame = rules(Signals(core="x", coverage=0.9, frames=(("split", "a", "b"),)), 1, min_coverage=0.5)
    assert frame.issue is not None and frame.issue.kind == "contradiction" and frame.contradicts
    low = rules(Signals(core="x", coverage=0.4), 1, min_coverage=0.5)
    assert low.issue is not None and low.issue.kind == "low_overlap"


def _model(**weights: float) -> Model:
    return Model(weights=weights, bias=2.0, threshold=0.5)


def test_model_keeps_or_withholds_by_its_weighted_sum() -> None:
    model = _model(negation_flip=-5.0)
    kept = decide(Signals(core="x", coverage=0.9), 1, min_coverage=0.5, model=model)
    assert kept.issue is None
    flip = Signals(core="x", coverage=0.9, negation_flip="negates")
    flipped = decide(flip, 1, min_coverage=0.5, model=model)
    assert flipped.issue is not None and flipped.issue.kind == "contradiction" and flipped.contradicts
    # a rule the model weighs lightly no longer withholds alone
    light = decide(
        Signals(core="x", coverage=0.9, new_scope="any"), 1, min_coverage=0.5, model=_model(new_scope=-1.0)
    )
    assert light.issue is None
    p = model.probability(_features(Signals(core="x", coverage=0.9, negation_flip="negates")))
    assert p == pytest.approx(1 / (1 + math.exp(3.0)))


def test_model_keeps_the_hard_verdicts_and_the_coverage_floor() -> None:
    keep_all = Model(weights={}, bias=50.0, threshold=0.5)
    other = decide(Signals(core="x", misattributed="the Staff Handbook"), 1, min_coverage=0.5, model=keep_all)
    assert other.issue is not None and other.issue.kind == "other_subject"
    empty = decide(Signals(core="x", empty=True), 1, min_coverage=0.5, model=keep_all)
    assert empty.issue is not None and empty.issue.kind == "nothing_to_verify"
    low = decide(Signals(core="x", coverage=0.2), 1, min_coverage=0.5, model=keep_all)
    assert low.issue is not None and low.issue.kind == "low_overlap"


def test_model_withheld_with_nothing_fired_reports_low_overlap() -> None:
    strict = Model(weights={"coverage": 1.0}, bias=-10.0, threshold=0.5)
    verdict = decide(Signals(core="x", coverage=0.7), 1, min_coverage=0.5, model=strict)
    assert verdict.issue is not None and verdict.issue.kind == "low_overlap" and not verdict.contradicts


def _from_json(data: dict[str, object]) -> Model:
    return from_json(data, name="weights.json", features=FEATURES)


def test_model_from_json_rejects_unknown_features_and_bad_numbers() -> None:
    with pytest.raises(ValueError, match="unknown features"):
        _from_json({"weights": {"vibes": 1.0}, "bias": 0, "threshold": 0.5})
    with pytest.raises(ValueError, match="numbers"):
        _from_json({"weights": {}, "bias": "high", "threshold": 0.5})
    model = _from_json({"weights": {"coverage": 2}, "bias": -1, "threshold": 0.4, "adopted": True})
    assert model.adopted and model.weights == {"coverage": 2.0}


def test_stored_weights_name_known_features_and_a_threshold_in_range() -> None:
    model = stored_model()
    assert model is not None
    assert set(model.weights) <= set(FEATURES) and model.weights
    assert 0.0 < model.threshold < 1.0
    data = json.loads(Path(decision.WEIGHTS_FILE).read_text(encoding="utf-8"))
    assert data["fitted_on"].endswith("split dev only")


def test_decide_uses_the_model_only_when_adopted_or_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    keep_all = Model(weights={}, bias=50.0, threshold=0.5)
    flipped = Signals(core="x", coverage=0.9, negation_flip="negates")

    def decided(setting: str) -> object:
        return decide(flipped, 1, min_coverage=0.5, model=active_model(setting)).issue

    monkeypatch.setattr(decision, "stored_model", lambda: keep_all)
    assert decided("") is not None  # not adopted: the rules
    assert decided("on") is None
    adopted = Model(weights={}, bias=50.0, threshold=0.5, adopted=True)
    monkeypatch.setattr(decision, "stored_model", lambda: adopted)
    assert decided("off") is not None
    assert decided("") is None


def test_fit_logistic_learns_the_sign_of_each_feature() -> None:
    import numpy as np

    from rag.evals.support_fit import fit_logistic

    rng = np.random.default_rng(3)
    x = rng.random((400, 2))
    y = (rng.random(400) < 1 / (1 + np.exp(-(4 * x[:, 0] - 4 * x[:, 1])))).astype(np.float64)
    w, b = fit_logistic(x, y, np.ones(400), 0.01)
    assert w[0] > 1.5 and w[1] < -1.5 and abs(b) < 1.5


def test_choose_threshold_keeps_most_faithful_while_reaching_the_harmful_floor() -> None:
    import numpy as np

    from rag.evals.support_fit import choose_threshold, rates

    p = np.array([0.9, 0.8, 0.6, 0.7, 0.3, 0.2])
    faithful = np.array([True, True, True, False, False, False])
    soft = np.ones(6, dtype=bool)
    t = choose_threshold(p, faithful, soft, floor=1.0)
    assert t == pytest.approx(0.8)
    assert rates((p >= t) & soft, faithful)[1] == 1.0
    assert choose_threshold(p, faithful, soft, floor=0.6) == pytest.approx(0.5)
    # a row a hard rule withholds counts as withheld whatever its probability
    assert choose_threshold(p, faithful, soft, floor=0.3) == pytest.approx(0.3)
    assert choose_threshold(p, faithful, np.array([True] * 5 + [False]), floor=0.3) == pytest.approx(0.2)
