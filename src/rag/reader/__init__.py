"""The offline extractive reader: question analysis, candidate sentences, answer types, subject
binding, and its calibrated gate. It implements `rag.answer.generate.Generator` and follows the
inline `[n]` citation contract; what it writes is verified like any reader's.

May import: `rag.language`, `rag.calibration` (the gate's model class), `rag.types`; never
`rag.answer`, `rag.support`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`.
"""
