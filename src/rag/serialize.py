"""Dataclasses to JSON: one generic converter shared by the API, the CLI and the eval harness."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime
from typing import Any

import orjson


def jsonable(value: Any) -> Any:
    """Recursively convert domain dataclasses, tuples and dates to JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in ("header", "ok"):
            if hasattr(type(value), name) and isinstance(getattr(type(value), name), property):
                out[name] = getattr(value, name)
        return out
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def dumps(value: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(jsonable(value), option=option)
