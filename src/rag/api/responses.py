"""JSON responses of the HTTP API: bodies are serialised with orjson, errors have one shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from fastapi.responses import Response


def json_response(content: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(content), status_code=status, headers=headers, media_type="application/json")


def error_response(
    status: int, type_: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The one error body: `{"error": {"type": ..., "message": ...}}`."""
    return json_response({"error": {"type": type_, "message": message}}, status, headers)
