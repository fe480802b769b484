"""Does a sentence say what its cited span says: attribution lead-ins, figures in any spelling, word
alignment, predicate frames, and the decision (rules, or calibrated weights when adopted).

May import: `rag.language`, `rag.calibration` (the decision's model class), `rag.types`; never
`rag.answer`, `rag.reader`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`. `rag.answer.verify` is
its caller.
"""
