"""Configuration: one `Settings` class, read once. The only module that reads the environment.

Every knob has a default and an environment variable (`RAG_` prefix); the providers'
own variables (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `VOYAGE_API_KEY`) and `MOCK`
keep their usual names. `.env.example` and the README list them all.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.access import Principal, load_principals
from rag.errors import ConfigError

# Defaults for the generation and compression models (current ids in the SDK's model list).
DEFAULT_GENERATION_MODEL = "claude-sonnet-5-5"
DEFAULT_COMPRESSION_MODEL = "claude-haiku-5-5"
# The small model that judges the sentences the support rules leave undecided (`rag.support.judge`):
# the cheap, current model (anthropic-wire.md 6), priced in the table below.
DEFAULT_JUDGE_MODEL = "claude-haiku-5-5"
# USD per million tokens, (input, output), from the providers' model pages (anthropic-wire.md 6).
# Cache writes cost 1.25x and cache reads 0.1x the input price. RAG_MODEL_PRICES (JSON) overrides.
DEFAULT_MODEL_PRICES: dict[str, tuple[float, float]] = {
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-haiku-5-5": (0.10, 0.50),
}


VOYAGE_DEFAULT_BASE_URL = "https://api.voyageai.com/v1"


def normalise_base_url(url: str) -> str:
    """`VOYAGE_BASE_URL` as the SDK wants it: the API root ending in `/v1`, with or without it given.

    "" stays "" (the SDK's default). `https://host` and `https://host/` become `https://host/v1`;
    `https://host/v1/` becomes `https://host/v1`.
    """
    url = url.strip().rstrip("/")
    if not url:
        return ""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"VOYAGE_BASE_URL {url!r} is not an http(s) URL such as {VOYAGE_DEFAULT_BASE_URL}")
    return url if parts.path.endswith("/v1") else url + "/v1"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RAG_", env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True
    )

    # storage
    db: str = Field("data/rag.db", description="SQLite database file")
    database_url: str = Field(
        "", description="postgresql://... selects the PostgreSQL store instead of SQLite"
    )
    db_connect_timeout: float = Field(
        5.0, ge=1.0, le=60.0, description="seconds to wait for PostgreSQL when connecting"
    )

    # ingest
    chunk_min_tokens: int = Field(120, ge=10, description="chunker: a section is packed to at least this")
    chunk_max_tokens: int = Field(
        220, ge=20, description="chunker: a chunk never exceeds this, unless one sentence does"
    )
    # bounds on what one file may cost to read (rag.ingest.parsed.Limits): past one, the file is
    # skipped with the reason and the run goes on
    ingest_max_expanded_mb: float = Field(
        100.0,
        gt=0,
        description="a DOCX whose zip members expand past this (MB), or a PDF whose text passes this many"
        " million characters, is skipped",
    )
    ingest_max_pdf_pages: int = Field(5000, ge=1, description="a PDF with more pages is skipped unread")
    ingest_max_chunks: int = Field(20000, ge=1, description="a document cut into more chunks is skipped")

    # retrieval and assembly
    top_k: int = Field(8, ge=1, le=50, description="chunks retrieved and reranked per question")
    candidates: int = Field(40, ge=1, le=500, description="BM25 candidates handed to the reranker")
    min_score: float | None = Field(
        None, ge=0.0, le=1.0, description="retrieval gate; unset means the reranker's calibrated default"
    )
    budget: int = Field(1200, ge=50, description="context token budget for the offline reader's blocks")
    max_blocks: int = Field(5, ge=1, le=20, description="most blocks the offline reader reads")
    # Claude's context: the cheapest (blocks, tokens) pair whose evidence reach is within 0.01 of the
    # best of the sweep over the eleven development sets (0.976 against 0.985 at 32 x 8000; 16 x 2000,
    # the pair before, 0.952), about 3,500 context tokens a call; docs/eval.md, "Context budget for
    # Claude" (`python -m benchmarks.budget_sweep`). Retrieval hands on at least this many.
    claude_budget: int = Field(4000, ge=50, description="context token budget for Claude's blocks")
    claude_max_blocks: int = Field(24, ge=1, le=64, description="most blocks sent to Claude")
    claude_neighbours: int = Field(
        1,
        ge=0,
        le=5,
        description="chunks on each side of the top chunk, in its document, also sent to Claude (their"
        " cost added to the budget, so no ranked chunk makes way); 0: none. The offline reader never"
        " gets them",
    )
    refusal_neighbours: int = Field(
        1,
        ge=0,
        le=5,
        description="chunks on each side of the top passage, in its document, also shown with an offline"
        " refusal's closest passages (after the top one); 0: none",
    )
    dense: Literal["auto", "off"] = Field(
        "auto",
        description="dense retrieval fused with BM25: 'auto' uses Voyage embeddings when VOYAGE_API_KEY is"
        " set, else the local sentence encoder when installed; 'off' (or 0, false, no): BM25 only",
    )

    # verification and conflicts
    # Calibrated by `rag eval --sweep min_overlap` (docs/eval.md): best AttributionBench accuracy
    # while keeping at least 80 % of genuinely supported claims.
    min_overlap: float = Field(0.42, ge=0.0, le=1.0, description="gate two: substantive overlap floor")
    conflict_policy: Literal["present_both", "prefer_newest"] = "present_both"
    compress: bool = Field(False, description="compress blocks before generation (verbatim guarantee)")
    fabricate: Literal["", "nonexistent", "unrelated"] = Field(
        "", description="offline generator demo switch: add a fabricated citation"
    )
    # Measured and not adopted (docs/eval.md, "Meaning in the offline generator"): on the unseen
    # holdout6 it moved answered-correctly 0.149 -> 0.170 and precision 0.438 -> 0.421, within noise,
    # for an encoder call on every question the words do not answer.
    offline_meaning: bool = Field(
        False, description="offline generator: match sentences to the question by meaning (local encoder)"
    )

    # English tools and calibrated decisions: read where the pipeline is built (`open_tools`, the support
    # check's options, the answer gate), handed down from there
    wordnet_dir: str = Field(
        "",
        description="WordNet's files: this folder first, then the installed ones; 'off' turns WordNet off",
    )
    parser: str = Field("", description="'off' turns the dependency parser of the support check off")
    encoder: str = Field("", description="'off' (or 0, false, no) turns the local sentence encoder off")
    encoder_dir: str = Field(
        "", description="the encoder's files in another folder ('off': none); empty: the installed package"
    )
    support_model: str = Field(
        "",
        description="the support check's calibrated model: 'on' uses it even when not adopted, 'off' keeps"
        " the rules; empty: only when its weights say adopted",
    )
    support_word_similarity: float | None = Field(
        None, description="support check: align words by meaning at this similarity; unset: off"
    )
    answer_gate: str = Field(
        "",
        description="offline answer gate: 'on' applies it even when not adopted, 'off' skips it; empty:"
        " only when its weights say adopted",
    )

    # models
    generation_model: str = DEFAULT_GENERATION_MODEL
    compression_model: str = DEFAULT_COMPRESSION_MODEL
    # With a key: the sentences the support rules leave undecided (withheld only for low overlap,
    # nothing against them) go to a small model, in one call per draft, and its cost is shown.
    judge: Literal["on", "off"] = Field(
        "on", description="'off': undecided sentences stay withheld, no judge call is made"
    )
    judge_model: str = Field(DEFAULT_JUDGE_MODEL, description="the small model that judges them")
    judge_timeout: float = Field(
        20.0, gt=0, description="seconds per judge call; a call that fails leaves them withheld"
    )
    # Output budget per model call: the answer's, plus a reserve for thinking. Current models think
    # before answering by default (adaptive thinking) and thinking counts against the call's
    # max_tokens, so the request asks for max_tokens + thinking_tokens and a long thought still
    # leaves the answer its room (4,096 in all by default, as before).
    max_tokens: int = Field(2048, ge=16, le=16000, description="output tokens per call for the answer")
    thinking_tokens: int = Field(
        2048, ge=0, le=32000, description="output tokens per call reserved for the model's thinking"
    )
    # `POST /ask` only (a stream never takes back what it sent): a reply cut at `max_tokens` is asked for
    # once more with this budget when it is larger; 0 leaves the cut reply as the answer (marked cut).
    retry_max_tokens: int = Field(
        0, ge=0, le=32000, description="output tokens of the one retry of a reply cut at max_tokens (0: none)"
    )
    model_timeout: float = Field(60.0, gt=0, description="seconds per model call")
    model_prices: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: dict(DEFAULT_MODEL_PRICES),
        description="USD per million (input, output) tokens per model, for the cost shown with answers",
    )
    model_retry_wait: float = Field(
        10.0,
        ge=0,
        le=120,
        description="the longest retry-after the SDK waits for before a retry; a provider asking for"
        " longer is not retried, and its wait reaches clients in Retry-After",
    )
    model_max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="retries after the first attempt on 429, 5xx, timeouts (Claude and Voyage)",
    )
    voyage_embed_model: str = "voyage-3.5"
    voyage_rerank_model: str = "rerank-2.5"
    embed_concurrency: int = Field(
        4, ge=1, le=32, description="Voyage embedding requests in flight at ingest"
    )
    breaker_failures: int = Field(
        3, ge=1, le=100, description="failed provider calls in a row that open its circuit breaker"
    )
    breaker_cooldown: float = Field(
        30.0, ge=0, description="seconds an open breaker skips the provider before one trial call"
    )

    # HTTP service
    max_question_chars: int = Field(2000, ge=1)
    max_history_turns: int = Field(
        8, ge=0, le=100, description="earlier turns a follow-up may send with it (more is a 422)"
    )
    max_history_answer_chars: int = Field(
        8000, ge=1, description="longest earlier answer a follow-up may send with it"
    )
    api_keys: str = Field("", description="comma-separated bearer keys; empty means no auth")
    principals: str = Field(
        "",
        description='JSON {"<key>": {"name": "alice", "groups": ["hr"]}}: keys with their readers\' groups',
    )
    principals_file: str = Field("", description="a JSON file in the RAG_PRINCIPALS format")
    admin_keys: str = Field(
        "",
        description="comma-separated bearer keys that may open /admin (the ask log, gaps, feedback); "
        "empty: /admin is open only while RAG_API_KEYS is empty too",
    )
    cors_origins: str = Field("", description="comma-separated allowed origins; empty means none")
    sse_keepalive: float = Field(
        10.0, gt=0, description="seconds without an event before an SSE keep-alive comment"
    )
    examples_asks: int = Field(
        40,
        ge=0,
        le=500,
        description="example questions the offline reader is asked, per corpus version and audience, "
        "before /examples offers the answered ones",
    )
    examples_asks_claude: int = Field(
        8,
        ge=0,
        le=100,
        description="the same with Claude reading, where each question asked is a model call",
    )
    log_level: str = "INFO"

    # evaluation
    eval_external_dir: str = Field(
        "",
        description="external benchmark JSONL folder; empty means <repo>/../shared/eval-external",
    )

    # providers (their own variable names) and the offline switch
    anthropic_api_key: str = Field(
        "", validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    anthropic_base_url: str = Field(
        "", validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "anthropic_base_url")
    )
    voyage_api_key: str = Field("", validation_alias=AliasChoices("VOYAGE_API_KEY", "voyage_api_key"))
    voyage_base_url: str = Field(
        "",
        validation_alias=AliasChoices("VOYAGE_BASE_URL", "voyage_base_url"),
        description="Voyage API root, with or without /v1 (https://api.voyageai.com or .../v1); empty means"
        " the SDK's default (tests point it at a loopback fake)",
    )
    mock: bool = Field(False, validation_alias=AliasChoices("MOCK", "mock"))

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str) -> str:
        """Empty (SQLite), a postgresql:// or postgres:// URL, or a libpq `key=value` string."""
        value = value.strip()
        if not value:
            return ""
        scheme, sep, _ = value.partition("://")
        if sep and scheme.lower() in ("postgresql", "postgres"):
            return value
        if not sep and "=" in value:
            return value
        shown = f"a {scheme}:// URL" if sep else "not a URL"
        raise ValueError(
            f"{shown} is not a PostgreSQL database: give postgresql://user:password@host:port/dbname,"
            " or leave it empty for SQLite at RAG_DB"
        )

    @field_validator("voyage_base_url")
    @classmethod
    def _voyage_root(cls, value: str) -> str:
        """The API root ending in /v1, whether or not it was given; a non-URL fails at startup."""
        return normalise_base_url(value)

    @field_validator("support_word_similarity", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("dense", mode="before")
    @classmethod
    def _dense_switch(cls, value: object) -> object:
        """'off', '0', 'false', 'no' switch dense retrieval off; 'on', '1', 'true', 'yes' and '' mean auto."""
        if isinstance(value, str):
            word = value.strip().lower()
            if word in ("off", "0", "false", "no"):
                return "off"
            if word in ("", "auto", "on", "1", "true", "yes"):
                return "auto"
        return value

    @field_validator("mock", mode="before")
    @classmethod
    def _empty_is_false(cls, value: object) -> object:
        return False if value in ("", None) else value

    @property
    def use_claude(self) -> bool:
        return bool(self.anthropic_api_key) and not self.mock

    @property
    def example_asks(self) -> int:
        """How many candidate example questions may be asked per pool (`rag.api.examples`): with
        Claude each costs a model call, so its own, small, limit."""
        return self.examples_asks_claude if self.use_claude else self.examples_asks

    @property
    def use_voyage(self) -> bool:
        return bool(self.voyage_api_key) and not self.mock

    @property
    def dense_enabled(self) -> bool:
        """Dense retrieval is wanted (`RAG_DENSE` is not off); whether an embedder exists is
        `rag.embeddings.make_embedder`'s answer."""
        return self.dense != "off"

    @property
    def api_key_list(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.api_keys.split(",") if k.strip())

    def principal_map(self) -> dict[str, Principal]:
        """Every configured API key -> its principal (rag.access); raises ConfigError on a bad entry."""
        return load_principals(self.principals, self.principals_file, self.api_key_list)

    @property
    def admin_key_list(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.admin_keys.split(",") if k.strip())

    @property
    def cors_origin_list(self) -> tuple[str, ...]:
        return tuple(o.strip() for o in self.cors_origins.split(",") if o.strip())


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment plus explicit overrides; invalid values raise ConfigError."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'RAG_' + str(e['loc'][0]).upper() if e['loc'] else '?'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once; the API overrides this in tests."""
    return load_settings()
