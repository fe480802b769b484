"""Errors, translated once at each edge (one HTTP handler, one CLI mapping).

    RagError
    ├── InvalidQuestion      the question is empty, whitespace or over the length limit (HTTP 422)
    ├── NotFound             an unknown chunk or document id (HTTP 404)
    ├── Gone                 a chunk id whose text was replaced or removed; ids never name new text (HTTP 410)
    ├── UpstreamUnavailable  the model provider stayed unavailable after the SDK's retries (HTTP 503)
    ├── StoreUnavailable     the database is missing, replaced by a broken file, unreadable, corrupt
    │                        or unreachable (HTTP 503); the service recovers when it is back
    ├── IngestError          a file could not be read or parsed; the run skips it and goes on
    └── ConfigError          a setting is missing or invalid; raised at startup

A refusal is not an error: it is an `Answer(abstained=True, reason=...)`.
"""

from __future__ import annotations


class RagError(Exception):
    """Root of every error this package raises on purpose."""

    type: str = "rag_error"
    status: int = 500


class InvalidQuestion(RagError):
    """Raised when a question is empty, whitespace-only or longer than the configured limit."""

    type = "invalid_question"
    status = 422


class NotFound(RagError):
    """Raised when a chunk or document id does not exist in the store."""

    type = "not_found"
    status = 404


class Gone(RagError):
    """Raised for a chunk id that was issued once but whose text was replaced or removed since."""

    type = "gone"
    status = 410


class StoreUnavailable(RagError):
    """Raised when the store cannot answer now; the message says which database and why."""

    type = "store_unavailable"
    status = 503


class UpstreamUnavailable(RagError):
    """Raised when the model provider is unavailable after the SDK's own retries are spent."""

    type = "upstream_unavailable"
    status = 503

    def __init__(self, message: str, *, retry_after: float = 30.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IngestError(RagError):
    """Raised for one file that cannot be ingested (binary, bad encoding, broken markup, empty)."""

    type = "ingest_error"
    status = 400

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class ConfigError(RagError):
    """Raised at startup when a setting is missing or invalid; the message names the variable."""

    type = "config_error"
    status = 500
