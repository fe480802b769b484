# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install ingest serve lint bench eval clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test,dev]'
	@touch $(STAMP)

install: $(STAMP)

ingest: $(STAMP)
	$(BIN)/rag ingest fixtures/corpus

run: ingest
	@echo "Open http://$(HOST):$(PORT)/ and try, on the bundled corpus:"
	@echo '  "How long do deleted projects stay in the trash?"   (a cited answer: click its [1])'
	@echo '  "What is the maximum file upload size?"             (two sources disagree: both shown, with dates)'
	@echo '  "Can I get my mobile phone bill reimbursed?"        (relevant documents, but no answer in them)'
	@echo '  "What is the capital of Australia?"                 (not in the knowledge base)'
	$(BIN)/rag serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy src

bench: $(STAMP)
	@if [ -f .ci/pg.env ]; then . ./.ci/pg.env; fi; $(BIN)/python -m benchmarks

eval: $(STAMP)
	$(BIN)/rag eval
	$(BIN)/rag eval --set fixtures/holdout/golden.jsonl --corpus fixtures/holdout/corpus
	$(BIN)/rag eval --set fixtures/holdout2/golden.jsonl --corpus fixtures/holdout2/corpus
	$(BIN)/rag eval --external squad2
	$(BIN)/rag eval --external attribution
	$(BIN)/rag eval --external conflicts

clean:
	rm -rf $(VENV) data .pytest_cache .hypothesis
