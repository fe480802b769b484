"""The offline extractive reader: question analysis, candidate sentences, answer types, subject
binding, and its calibrated gate. It implements `rag.answer.generate.Generator` and follows the
inline `[n]` citation contract; what it writes is verified like any reader's.

Its modules, in import order (each imports only modules listed before it):
- `words`: a text's normalised keys, terms, identifiers, inline code literals and names (cached).
- `prose`: a block's text as prose sentences under their labels; code and markup left out, tables
  rendered as statements.
- `answer_types`: the kind of fact a question asks for, and whether a sentence states one.
- `defaults`: whether a sentence mentioning a default states its value.
- `procedure`: whether a sentence tells a means, for a "how do I ...?" question.
- `definition`: whether a sentence has X for its subject, for a "What does X do / mean?" question.
- `binding`: whether the value a sentence states belongs to the asked subject.
- `question`: what the question asks (`Ask`): weighted terms, the asking sentence and its
  situation, identifiers, the asked kind, WordNet-aligned and unwritten words, `share`.
- `answerable`: whether a sentence answers (`Reading`): coverage, binding, labels, topic, the
  never-an-answer checks.
- `candidates`: each block's sentences read in context, the eligible ones scored and ranked
  (`Candidate`), the meaning pass.
- `fabricate`: the fabrication switch for demonstrations and verifier tests.
- `offline`: `OfflineGenerator`, composing the steps above.
- `gate`: the calibrated answer gate on the generator's choice (reads candidates by protocol).

May import: `rag.language`, `rag.calibration` (the gate's model class), `rag.types`; never
`rag.answer`, `rag.support`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`.
"""
