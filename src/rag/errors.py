"""Errors, translated once at each edge (one HTTP handler, one CLI mapping).

    RagError
    ├── InvalidQuestion      the question is empty, whitespace or over the length limit (HTTP 422)
    ├── NotFound             an unknown chunk or document id (HTTP 404)
    ├── Gone                 a chunk id whose text was replaced or removed; ids never name new text (HTTP 410)
    ├── UpstreamUnavailable  the model provider stayed unavailable after the SDK's retries (HTTP 503);
    │                        `type` says how: upstream_rate_limited, upstream_overloaded, upstream_unavailable
    ├── UpstreamRejected     the model provider refused the request for good (HTTP 502); `type` says why:
    │                        upstream_bad_request, upstream_auth_failed, upstream_model_not_found,
    │                        upstream_request_too_large
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

    def __init__(
        self, message: str, *, retry_after: float = 30.0, type: str = "upstream_unavailable"
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.type = type


class UpstreamRejected(RagError):
    """Raised when the model provider answers with an error that retrying cannot fix (a 4xx other than
    429): a malformed or too large request, a rejected key, an unknown model."""

    type = "upstream_bad_request"
    status = 502

    def __init__(self, message: str, *, type: str = "upstream_bad_request") -> None:
        super().__init__(message)
        self.type = type


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
