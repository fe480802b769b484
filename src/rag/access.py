"""Who may read what: document audiences, principals, and the SQL that filters by them.

A document's audience is a set of groups (front matter `access: [hr, security]`, or
`rag ingest --access hr,security`); an empty audience means everyone. A principal is a name and
a set of groups; it may read a document when the audience is empty or shares a group with it.
`Principal.operator()` (the local operator who owns the database) reads everything.

Stored form: the audience as text, `""` for everyone, else `",g1,g2,"` (lowercase, sorted), so
one `LIKE` per caller group tests membership on SQLite and PostgreSQL alike (`visible_sql`).
Group names are lowercase letters, digits, `.`, `_` and `-` (at most 64 characters).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import ConfigError

ADMIN_GROUP = "admin"
EVERYONE = ""
_GROUP_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def group_names(value: object, *, where: str = "access") -> frozenset[str]:
    """Validated, lowercased group names from a list or a comma-separated string; ValueError names
    the bad one."""
    if value is None or value == "":
        return frozenset()
    items: Iterable[object]
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        raise ValueError(f"{where} must be a list of group names, got {type(value).__name__}")
    out = set()
    for item in items:
        name = str(item).strip().lower() if isinstance(item, str | int) else None
        if name is None or not _GROUP_RE.fullmatch(name):
            raise ValueError(
                f"{where}: {item!r} is not a group name (letters, digits, '.', '_', '-'; at most 64)"
            )
        out.add(name)
    return frozenset(out)


def audience_text(groups: Iterable[str]) -> str:
    """The stored form of an audience: "" for everyone, else ",a,b," (sorted)."""
    names = sorted(set(groups))
    return f",{','.join(names)}," if names else EVERYONE


def audience_groups(text: str) -> tuple[str, ...]:
    """The groups of a stored audience, sorted; () for everyone."""
    return tuple(g for g in text.split(",") if g)


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller: a name and its groups. `everything` marks the local operator, who reads every document."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    everything: bool = False

    @classmethod
    def operator(cls) -> Principal:
        return cls(name="operator", everything=True)

    @classmethod
    def anonymous(cls) -> Principal:
        return cls(name="anonymous")

    @property
    def admin(self) -> bool:
        """May read the ask log, the gap queue and feedback."""
        return self.everything or ADMIN_GROUP in self.groups

    @property
    def reads(self) -> frozenset[str] | None:
        """The groups the store filters by: None means no filter (the operator)."""
        return None if self.everything else self.groups

    def may_read(self, audience: str) -> bool:
        """Whether this principal may read a document with the stored audience `audience`."""
        return self.everything or audience == EVERYONE or bool(self.groups & set(audience_groups(audience)))


def visible_sql(groups: frozenset[str] | None, column: str) -> tuple[str, list[Any]]:
    """A SQL condition (with `?` parameters) true for rows of `column` readable by `groups`.

    None (no filter) gives "1 = 1"; no groups gives `column = ''`. `_` in a group name is escaped
    for LIKE, so a name never matches another.
    """
    if groups is None:
        return "1 = 1", []
    parts = [f"{column} = ''"]
    params: list[Any] = []
    for group in sorted(groups):
        parts.append(f"{column} LIKE ? ESCAPE '!'")
        params.append("%," + group.replace("!", "!!").replace("_", "!_").replace("%", "!%") + ",%")
    return "(" + " OR ".join(parts) + ")", params


def parse_principals(raw: object, *, where: str) -> dict[str, Principal]:
    """`{"<key>": {"name": "alice", "groups": ["hr"]}}` -> key -> Principal; ConfigError names the problem."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a JSON object mapping API keys to principals")
    out: dict[str, Principal] = {}
    for key, spec in raw.items():
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"{where}: an API key is empty")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not spec["name"].strip():
            raise ConfigError(f'{where}: the principal of a key needs a non-empty "name"')
        try:
            groups = group_names(spec.get("groups") or [], where=f"{where}: groups of {spec['name']!r}")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        out[key.strip()] = Principal(name=spec["name"].strip(), groups=groups)
    return out


def load_principals(inline: str, path: str, plain_keys: Iterable[str]) -> dict[str, Principal]:
    """Every API key -> its principal: RAG_PRINCIPALS (JSON), then RAG_PRINCIPALS_FILE, then the plain
    RAG_API_KEYS (each a principal with no groups, named "key-1", "key-2"... by position)."""
    principals: dict[str, Principal] = {}
    for i, key in enumerate(plain_keys, start=1):
        principals[key] = Principal(name=f"key-{i}")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"RAG_PRINCIPALS_FILE {path!r} cannot be read: {exc.strerror or exc}") from None
        principals.update(parse_principals(_json(text, "RAG_PRINCIPALS_FILE"), where="RAG_PRINCIPALS_FILE"))
    if inline.strip():
        principals.update(parse_principals(_json(inline, "RAG_PRINCIPALS"), where="RAG_PRINCIPALS"))
    return principals


def _json(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
