from __future__ import annotations

from rag.answer.compress import Compression, ExtractiveCompressor, keep_verbatim
from rag.types import Block, Chunk

TEXT = (
    "Exports run nightly at 02:00 UTC. Each export keeps 14 daily snapshots. "
    "The office dog is called Biscuit. Snapshots older than that are deleted."
)


def block(n: int, text: str) -> Block:
    chunk = Chunk(chunk_id=f"d{n}#c01", doc_id=f"d{n}", title="T", section="", text=text)
    return Block(n=n, chunk=chunk, score=0.5, sent_text=text)


def test_extractive_compressor_keeps_only_sentences_sharing_question_terms():
    out = ExtractiveCompressor().compress("How many snapshots does an export keep?", [block(1, TEXT)])
    sent = out.blocks[0].sent_text
    assert "Biscuit" not in sent
    assert "Each export keeps 14 daily snapshots." in sent
    assert out.tokens_after < out.tokens_before
    assert out.saving_pct > 0


def test_extractive_compressor_no_shared_term_keeps_one_sentence():
    out = ExtractiveCompressor().compress("unrelated zebra", [block(1, TEXT)])
    assert out.blocks[0].sent_text == "Exports run nightly at 02:00 UTC."


def test_extractive_compressor_keeps_original_chunk_and_number():
    original = block(3, TEXT)
    out = ExtractiveCompressor().compress("snapshots", [original])
    assert out.blocks[0].chunk == original.chunk
    assert out.blocks[0].n == 3


def test_keep_verbatim_paraphrased_sentence_reverts_to_original():
    assert keep_verbatim(TEXT, "Exports run every night.") == TEXT


def test_keep_verbatim_verbatim_sentences_are_kept():
    kept = "Each export keeps 14 daily snapshots. Snapshots older than that are deleted."
    assert keep_verbatim(TEXT, kept) == kept


def test_keep_verbatim_empty_compression_reverts():
    assert keep_verbatim(TEXT, "  ") == TEXT


def test_compression_saving_pct_zero_before_is_zero():
    assert Compression(blocks=(), tokens_before=0, tokens_after=0).saving_pct == 0.0
    assert Compression(blocks=(), tokens_before=200, tokens_after=50).saving_pct == 75.0
