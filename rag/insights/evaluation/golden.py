"""Golden question files (docs/design.md, "Public interface"): load and check them.

A golden file is a YAML list of `{id, question, answerable, answer, sources, keywords, tags}` with
optional `conflict: {preferred, stale, preferred_source, stale_source}`, `parts: [{text,
answerable, keywords}]` and `required_access`. Anything malformed is an `EvalError` naming the
entry, before a single question is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag.errors import EvalError


@dataclass(frozen=True, slots=True)
class GoldenConflict:
    preferred: str
    stale: str
    preferred_source: str
    stale_source: str


@dataclass(frozen=True, slots=True)
class GoldenPart:
    text: str
    answerable: bool
    keywords: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GoldenItem:
    id: str
    question: str
    answerable: bool
    answer: str | None
    sources: tuple[str, ...]
    keywords: tuple[str, ...]
    tags: tuple[str, ...]
    conflict: GoldenConflict | None = None
    parts: tuple[GoldenPart, ...] = ()
    required_access: tuple[str, ...] = ()


def load_golden(path: Path) -> list[GoldenItem]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise EvalError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(loaded, list) or not loaded:
        raise EvalError(f"{path} must hold a non-empty list of questions")
    items = [_item(entry, f"{path}, entry {i}") for i, entry in enumerate(loaded, 1)]
    ids = [item.id for item in items]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise EvalError(f"{path}: duplicate ids {duplicated}")
    return items


def _item(entry: Any, where: str) -> GoldenItem:
    if not isinstance(entry, dict):
        raise EvalError(f"{where}: each entry is a mapping")
    for key in ("id", "question", "answerable"):
        if key not in entry:
            raise EvalError(f"{where}: missing {key!r}")
    where = f"{where} ({entry['id']})"
    question = entry["question"]
    if not isinstance(question, str) or not question.strip():
        raise EvalError(f"{where}: question must be a non-empty string")
    if not isinstance(entry["answerable"], bool):
        raise EvalError(f"{where}: answerable must be true or false")
    conflict = entry.get("conflict")
    return GoldenItem(
        id=str(entry["id"]),
        question=question,
        answerable=entry["answerable"],
        answer=entry.get("answer"),
        sources=_strings(entry.get("sources"), where, "sources"),
        keywords=_strings(entry.get("keywords"), where, "keywords"),
        tags=_strings(entry.get("tags"), where, "tags"),
        conflict=None if conflict is None else _conflict(conflict, where),
        parts=tuple(_part(p, where) for p in entry.get("parts") or ()),
        required_access=_strings(entry.get("required_access"), where, "required_access"),
    )


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _conflict(value: Any, where: str) -> GoldenConflict:
    keys = ("preferred", "stale", "preferred_source", "stale_source")
    if not isinstance(value, dict) or any(not isinstance(value.get(k), str) for k in keys):
        raise EvalError(f"{where}: conflict needs {', '.join(keys)}")
    return GoldenConflict(*(value[k] for k in keys))


def _part(value: Any, where: str) -> GoldenPart:
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise EvalError(f"{where}: each part needs a text")
    return GoldenPart(
        value["text"], bool(value.get("answerable", True)), _strings(value.get("keywords"), where, "parts.keywords")
    )
