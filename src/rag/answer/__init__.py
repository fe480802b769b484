"""The request path, one module per stage, composed only in `pipeline.py`: retrieve, rerank, gates
(refusal lines 1 and 3), assemble, conflicts (line 2), compress, prompt, generate (the reader:
`claude.py` or `rag.reader`), parse, verify, and the core that turns a draft's pieces into events
(`core.py`, `events.py`).

May import: `rag.support`, `rag.reader`, `rag.language`, `rag.embeddings`, `rag.store`, and the top
level (`types`, `errors`, `config`, `access`, `serialize`, `voyage`, `breaker`, `calibration`); never
`rag.ingest`, `rag.api`, `rag.cli` or `rag.evals`.
"""
