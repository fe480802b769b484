"""The local sentence encoder (all-MiniLM-L6-v2 in NumPy): agreement with the reference
implementation, and the properties callers rely on."""

from __future__ import annotations

import numpy as np
import pytest

from rag.language import encoder as encoder_module
from rag.language.encoder import Encoder, model_dir
from rag.language.tools import installed

MEANING = installed().meaning
ENC = MEANING.encoder() if MEANING is not None else None
needs_model = pytest.mark.skipif(ENC is None, reason="the encoder's weights (ENCODER_PKG) are not installed")


@needs_model
def test_matches_the_reference_implementation() -> None:
    # the first eight numbers sentence-transformers 5 (PyTorch 2.13, CPU) gives for these texts
    reference = {
        "How long are deleted projects kept in the trash?": [
            -0.073287, -0.005847, 0.015972, -0.033067, 0.044876, -0.004663, 0.005204, -0.079274
        ],
        "Ünïcode façade — naïve café, 東京": [
            0.063872, 0.039142, 0.056243, -0.05686, -0.057427, -0.038266, 0.00486, -0.068683
        ],
    }  # fmt: skip
    vectors = ENC.encode(list(reference))
    for row, expected in zip(vectors, reference.values(), strict=True):
        np.testing.assert_allclose(row[:8], expected, atol=2e-5)


@needs_model
def test_unit_vectors_and_meaning() -> None:
    v = ENC.encode(
        [
            "How long do deleted projects stay in the trash?",
            "Deleted projects are kept in the trash for 30 days.",
            "The API allows 100 requests per minute per key.",
        ]
    )
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    assert sims[0, 1] > 0.7 > sims[0, 2]


@needs_model
def test_a_text_reads_the_same_alone_and_in_a_padded_batch() -> None:
    short = "Backups run nightly."
    batch = [short, "A much longer sentence, so that the short one is padded in the same batch. " * 3]
    alone = ENC.encode([short])[0]
    padded = ENC.encode(batch)[0]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


@needs_model
def test_long_and_empty_inputs() -> None:
    assert ENC.encode([]).shape == (0, 384)
    long = ENC.encode(["word " * 2000, ""])  # truncated to the model's 256 tokens; empty is [CLS][SEP]
    assert long.shape == (2, 384)
    assert np.isfinite(long).all()
    assert ENC.token_count("word " * 2000) == 256


def test_switched_off_or_missing(tmp_path) -> None:
    assert Encoder.load(model_dir(encoder="off")) is None
    assert Encoder.load(model_dir(encoder_dir=str(tmp_path))) is None  # no weights there


def test_damaged_weights_are_refused_with_a_warning(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json")
    (tmp_path / "config.json").write_text("{}")
    assert encoder_module.Encoder.load(model_dir(encoder_dir=str(tmp_path))) is None
    assert "not loaded" in caplog.text
