"""The answer gate (`rag.reader.gate`) and its fit (`rag.evals.answer_fit`).

Documents are written here about a made-up beekeeping association, not taken from any fixture.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag.answer.pipeline import Pipeline, build_pipeline
from rag.calibration import Model, from_json
from rag.config import load_settings
from rag.evals import answer_fit
from rag.evals.answer_fit import Row
from rag.ingest.indexer import ingest_paths
from rag.reader import gate
from rag.reader.gate import FEATURES, choice, measure
from rag.reader.offline import OfflineGenerator
from rag.store import SqliteStore

HIVES = """# Apiary rules

## Hives per member

Each member may keep at most three hives at the shared apiary.
Hives must stand at least two metres from the footpath.

## Inspections

The apiary warden inspects every hive in April and in September.
Members who miss an inspection pay a fee of 15 euros.
"""

HONEY = """# Honey sales

## Market stall

The association sells members' honey at the Saturday market from May to October.
Jars must carry the beekeeper's name and the harvest year.

## Prices

A 450 gram jar of spring honey sells for 7 euros.
"""

CONFIDENT = "How many hives can each member keep at the shared apiary?"
WEAK = "Which month does the association stop selling at the market?"
NEIGHBOUR = "When are hives inspected?"
PRICE = "What does a jar of spring honey cost?"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    root = tmp_path_factory.mktemp("bees")
    docs = root / "docs"
    docs.mkdir()
    (docs / "apiary.md").write_text(HIVES, encoding="utf-8")
    (docs / "honey.md").write_text(HONEY, encoding="utf-8")
    path = str(root / "bees.db")
    s = SqliteStore(path)
    ingest_paths(s, [docs], settings=load_settings(db=path, mock=True))
    yield s
    s.close()


def _pipeline(store: SqliteStore, answer_gate: str = "") -> Pipeline:
    settings = load_settings(db=":memory:", mock=True, answer_gate=answer_gate)
    return build_pipeline(settings, store=store, generator=OfflineGenerator())


def _model(threshold: float, **weights: float) -> Model:
    return Model(weights=weights, means={}, scales={}, bias=0.0, threshold=threshold, adopted=True)


def _use(monkeypatch: pytest.MonkeyPatch, model: Model | None) -> None:
    monkeypatch.setattr(gate, "stored_model", lambda: model)


def test_measure_reads_the_chosen_sentence_and_its_competitors(store: SqliteStore) -> None:
    pipeline = _pipeline(store)
    plan = pipeline.plan(CONFIDENT)
    generator = OfflineGenerator()
    drafts = generator.drafts(CONFIDENT, plan.blocks)
    assert drafts and "three hives" in drafts[0].text
    found = choice(generator, CONFIDENT, plan.blocks, [d.text for d in drafts])
    assert found is not None
    ranked, chosen = found
    features = measure(CONFIDENT, plan.blocks, ranked, chosen, len(drafts))
    assert set(features) == set(FEATURES)
    assert chosen.text == drafts[0].text
    assert 0.0 < features["coverage"] <= 1.0 + 1e-9
    assert features["asks_kind"] == 1.0 and features["kind_fit"] > 0  # "how many": a figure is asked
    assert features["top_score"] >= features["score_margin"] >= 0.0


def test_a_low_confidence_answer_is_refused_with_the_closest_passages(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a model that trusts only meaning closeness, with a bar the answer cannot reach
    _use(monkeypatch, _model(0.999, meaning=1.0))
    answer = _pipeline(store).answer(CONFIDENT)
    assert answer.abstained and answer.reason == "no_citations"
    assert "not confident enough" in answer.message
    assert answer.closest and not answer.sentences


def test_a_confident_answer_is_kept(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _model(0.5, coverage=4.0))
    answer = _pipeline(store).answer(CONFIDENT)
    assert not answer.abstained and "three hives" in answer.text


def test_the_stored_model_refuses_a_neighbouring_sentence_and_keeps_a_direct_answer(
    store: SqliteStore,
) -> None:
    """The fitted weights (forced on: they are not adopted) on documents of another domain: the
    generator answers "when are hives inspected?" with the sentence next to the answer (the fee for
    missing an inspection), far in meaning and leaning on its section for coverage; the gate refuses
    it, and keeps the direct answers."""
    if gate.stored_model() is None:
        pytest.skip("no gate_weights.json")
    ungated = _pipeline(store, "off").answer(NEIGHBOUR)
    # the generator no longer gives the neighbour (it never says "inspected"; issue 28), so the gate
    # has nothing to refuse there; gated, it stays a refusal with the closest passages
    assert "fee" not in ungated.text
    pipeline = _pipeline(store, "on")
    refused = pipeline.answer(NEIGHBOUR)
    assert refused.abstained and refused.reason == "no_citations" and refused.closest
    for question, fact in ((CONFIDENT, "three hives"), (PRICE, "7 euros")):
        kept = pipeline.answer(question)
        assert not kept.abstained and fact in kept.text, question


def test_gate_off_gives_exactly_the_ungated_answers(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = [CONFIDENT, WEAK, PRICE, NEIGHBOUR]
    _use(monkeypatch, _model(2.0, coverage=1.0))  # would refuse everything if it ran
    gated_off = [_pipeline(store, "off").answer(q) for q in questions]
    _use(monkeypatch, None)
    ungated = [_pipeline(store).answer(q) for q in questions]
    assert [(a.abstained, a.reason, a.text, a.citations) for a in gated_off] == [
        (a.abstained, a.reason, a.text, a.citations) for a in ungated
    ]
    assert any(not a.abstained for a in ungated)


def test_a_model_not_adopted_is_not_applied_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(weights={}, means={}, scales={}, bias=0.0, threshold=0.5, adopted=False)
    _use(monkeypatch, model)
    assert gate.active_model() is None
    assert gate.active_model("on") is model


def _synthetic(seed: int = 3) -> list[Row]:
    """Three sets; `meaning` separates right from wrong answers, the other features are noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in ("a", "b", "c"):
        for i in range(30):
            correct = bool(i % 3)
            x = {f: float(rng.normal()) for f in FEATURES}
            x["meaning"] = (1.0 if correct else -1.0) + 0.3 * float(rng.normal())
            rows.append(Row(g, f"{g}{i}", True, correct, x))
    return rows


def test_fit_on_synthetic_rows_reaches_the_precision_rule_and_writes_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answer_fit, "L2_GRID", (1.0,))
    monkeypatch.setattr(answer_fit, "SIZES", (1, 0))
    monkeypatch.setattr(answer_fit, "TARGETS", (0.9,))
    target = tmp_path / "weights.json"
    monkeypatch.setattr(answer_fit, "WEIGHTS_FILE", target)
    # other candidates (chosen=False) train the model but are never judged as decisions
    others = [Row(r.group, r.case_id, r.answerable, r.correct, r.x, chosen=False) for r in _synthetic(seed=5)]
    report = answer_fit.run([*_synthetic(), *others], write=True)
    assert report["rows"] == 90 and report["other_candidate_rows"] == 90
    assert report["no_gate"]["answered_before"] == 90
    pooled = report["leave_one_set_out"]["pooled"]
    assert pooled["precision_after"] >= 0.9 and pooled["correct_kept"] >= 40
    assert set(report["leave_one_set_out"]["per_set"]) == {"a", "b", "c"}
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["adopted"] is True and "meaning" in data["weights"] and data["weights"]["meaning"] > 0
    model = from_json(data, name=target.name)
    right = {f: 0.0 for f in FEATURES} | {"meaning": 1.0}
    wrong = {f: 0.0 for f in FEATURES} | {"meaning": -1.0}
    assert model.keeps(right) and not model.keeps(wrong)


def test_choose_threshold_is_the_lowest_reaching_the_target() -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    assert answer_fit.choose_threshold(p, y, 0.9) == pytest.approx(0.4)
    assert answer_fit.choose_threshold(p, y, 0.7) == pytest.approx(0.2)
    assert answer_fit.choose_threshold(p, np.zeros(5), 0.9) == 1.0
    # judged per set: set "b" keeps a wrong answer above 0.2, so only 0.5 reaches 0.9 in both
    groups = np.array(["a", "a", "b", "b", "a"])
    y2 = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    p2 = np.array([0.1, 0.3, 0.4, 0.2, 0.5])
    assert answer_fit.choose_threshold(p2, y2, 0.9, groups) == pytest.approx(0.5)
    assert answer_fit.choose_threshold(p2, y2, 0.7) == pytest.approx(0.2)


def test_the_stream_refuses_as_the_whole_answer_does(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from rag.answer.events import RefusalEvent, SentenceEvent

    _use(monkeypatch, _model(0.999, meaning=1.0))
    pipeline = _pipeline(store)

    async def collect() -> list[object]:
        return [e async for e in pipeline.answer_stream(CONFIDENT)]

    seen = asyncio.run(collect())
    refusals = [e for e in seen if isinstance(e, RefusalEvent)]
    assert not any(isinstance(e, SentenceEvent) for e in seen)
    assert refusals and refusals[0].reason == "no_citations" and refusals[0].closest
