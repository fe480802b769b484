"""Does a sentence say what its cited span says: attribution lead-ins, figures in any spelling, word
alignment, predicate frames, and the decision (rules, or calibrated weights when adopted).

- `check`: the composition: `check(...)`, `signals(...)` (every measurement of one sentence against its
  spans) and `CheckOptions`; the steps in order are in its docstring.
- `leadins`: an attribution lead-in naming the cited document set aside, one naming another flagged.
- `lexical`: the rules on words and clauses: a new name or scope word, reversed opposites, a negation
  flip, swapped terms.
- `alignment`: words aligned by stem, WordNet sense, acronym or meaning; substituted words.
- `frames`: the parser's predicate frames compared: polarity, roles, split pairs, narrowing.
- `figures`: every quantity of the sentence stated by its evidence, in any spelling.
- `decision`: the measured `Signals` turned into a `Decision` (hand rules or the calibrated model);
  a `Decision` withheld only for low coverage, nothing against it, is `undecided`.
- `judge`: the small-model judge of undecided sentences: its items, tool schema and how its rulings are
  read, and the `Judge` protocol (the call is `rag.answer.judge_call`).

Inside the room imports run one way: `check` -> `leadins`, `lexical`, `alignment`, `frames`, `figures`,
`decision`; `frames` -> `alignment` (WordNet senses); `judge` imports none of them; no module imports
`check`. The room may import `rag.language`, `rag.calibration` (the decision's model class),
`rag.types`; never `rag.answer`,
`rag.reader`, `rag.ingest`, `rag.store`, `rag.api` or `rag.cli`. `rag.answer.verify` is its caller.
"""
