"""Calibrated decisions: the one logistic model class, its weights file and its one loader.

The support check's decision (`rag.support.decision`, `support/weights.json`) and the offline reader's
answer gate (`rag.reader.gate`, `reader/gate_weights.json`) are both a `Model` fitted by a script in
`rag.evals` (`support_fit`, `answer_fit`), which writes the JSON file `load` reads: `weights`,
`bias`, `threshold`, optional `means` and `scales` (standardisation), and `adopted` (whether the
pipeline applies it by default; `in_use` reads the on/off switch that overrides that).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# z is clamped to this range: exp stays finite, and every probability is in (0, 1).
_Z_LIMIT = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Model:
    """P = sigmoid(bias + sum over `weights` of w_f * (x_f - mean_f) / scale_f), z clamped to [-60, 60];
    a feature without a weight counts zero, one the input lacks counts 0.0, a missing mean 0, a missing
    (or zero) scale 1. The answer is kept when P reaches `threshold`."""

    weights: Mapping[str, float]
    bias: float
    threshold: float
    adopted: bool = False
    means: Mapping[str, float] = field(default_factory=dict)
    scales: Mapping[str, float] = field(default_factory=dict)

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.bias + sum(
            w * (features.get(f, 0.0) - self.means.get(f, 0.0)) / (self.scales.get(f, 1.0) or 1.0)
            for f, w in self.weights.items()
        )
        return 1.0 / (1.0 + math.exp(-max(-_Z_LIMIT, min(_Z_LIMIT, z))))

    def keeps(self, features: Mapping[str, float]) -> bool:
        """Whether the probability of `features` reaches the threshold."""
        return self.probability(features) >= self.threshold


def from_json(data: Mapping[str, object], *, name: str, features: Sequence[str] | None = None) -> Model:
    """The model of a weights file's contents; ValueError (naming the file as `name`) on a bad entry.
    With `features`, a weight naming another feature is an error, and the weights are kept in the
    order of `features` (the order the sum is taken in)."""
    raw = data.get("weights")
    if not isinstance(raw, dict):
        raise ValueError(f"{name}: 'weights' must be an object of feature -> weight")
    if features is not None:
        unknown = sorted(set(raw) - set(features))
        if unknown:
            raise ValueError(f"{name}: unknown features {unknown}")
        raw = {f: raw[f] for f in features if f in raw}
    bias, threshold = data.get("bias"), data.get("threshold")
    if not isinstance(bias, int | float) or not isinstance(threshold, int | float):
        raise ValueError(f"{name}: 'bias' and 'threshold' must be numbers")
    return Model(
        weights=_numbers(raw, name, "weights"),
        means=_numbers(data.get("means", {}), name, "means"),
        scales=_numbers(data.get("scales", {}), name, "scales"),
        bias=float(bias),
        threshold=float(threshold),
        adopted=data.get("adopted") is True,
    )


def _numbers(raw: object, name: str, key: str) -> dict[str, float]:
    if not isinstance(raw, dict) or not all(isinstance(v, int | float) for v in raw.values()):
        raise ValueError(f"{name}: {key!r} must be an object of feature -> number")
    return {str(k): float(v) for k, v in raw.items()}


@lru_cache(maxsize=8)
def load(path: Path, *, features: tuple[str, ...] | None = None) -> Model | None:
    """The model stored at `path` (read once per process), None when the file is absent; see `from_json`."""
    if not path.is_file():
        return None
    return from_json(json.loads(path.read_text(encoding="utf-8")), name=path.name, features=features)


def in_use(model: Model | None, setting: str) -> Model | None:
    """The model a switch leaves applied: none for "off", `model` for "on" (even when not adopted, for
    measuring), else `model` only when it was adopted."""
    if setting == "off" or model is None:
        return None
    return model if model.adopted or setting == "on" else None
