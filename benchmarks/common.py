"""Shared set-up for the benchmarks: the SQuAD subset as a knowledge base, timing helpers."""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import shutil
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "data" / "squad2-1000" / "Squad2_1000.csv"
CACHE = REPO / "benchmarks" / ".cache"
RAMDOCS = REPO.parent / "shared" / "data" / "ramdocs" / "RAMDocs_test.jsonl"


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    question: str
    answer: str
    paragraph_id: str
    title: str
    answerable: bool


@dataclass(frozen=True, slots=True)
class SquadParagraph:
    paragraph_id: str
    title: str
    text: str


def load_squad(path: Path = SQUAD) -> tuple[list[SquadParagraph], list[SquadQuestion]]:
    """The 124 paragraphs and 1,000 questions (508 answerable) of the shared SQuAD 2.0 subset."""
    paragraphs: dict[str, SquadParagraph] = {}
    questions: list[SquadQuestion] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            record = ast.literal_eval(row["paragraph"])[0]
            raw = record["paragraph_text"]
            parts = ast.literal_eval(raw) if raw.startswith("[") else [raw]
            text = " ".join(str(p) for p in parts).strip()
            pid = hashlib.sha1(text.encode()).hexdigest()[:12]
            paragraphs.setdefault(pid, SquadParagraph(pid, record["title"], text))
            answer = row["answer"].strip()
            questions.append(SquadQuestion(row["question"], answer, pid, record["title"], answer != "No answer"))
    return list(paragraphs.values()), questions


def write_squad_corpus(folder: Path, paragraphs: list[SquadParagraph]) -> dict[str, str]:
    """One Markdown file per paragraph; returns file path → paragraph id."""
    folder.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for p in paragraphs:
        path = folder / f"{p.paragraph_id}.md"
        title = p.title.replace('"', "'")
        path.write_text(f'---\ntitle: "{title}"\neffective_date: 2020-01-01\n---\n\n{p.text}\n', encoding="utf-8")
        mapping[str(path)] = p.paragraph_id
    return mapping


def split_by_title(questions: list[SquadQuestion]) -> tuple[list[SquadQuestion], list[SquadQuestion]]:
    """A calibration half and a report half, split by article title so no paragraph is in both."""
    titles = sorted({q.title for q in questions})
    calibration_titles = {t for i, t in enumerate(titles) if i % 2 == 0}
    calibrate = [q for q in questions if q.title in calibration_titles]
    report = [q for q in questions if q.title not in calibration_titles]
    return calibrate, report


def corpus(n: int) -> list[str]:
    """`n` distinct RAMDocs passages of 600-800 characters: the ~700-character chunks of the ingest benchmark."""
    seen: dict[str, None] = {}
    for line in RAMDOCS.read_text(encoding="utf-8").splitlines():
        for doc in json.loads(line)["documents"]:
            text = " ".join(doc["text"].split())
            if 600 <= len(text) <= 800 and "\x00" not in text:
                seen.setdefault(text)
    texts = list(seen)
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} distinct passages of 600-800 characters")
    return texts[:n]


@contextmanager
def timer() -> Iterator[list[float]]:
    box: list[float] = []
    start = time.perf_counter()
    yield box
    box.append(time.perf_counter() - start)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values)


def cached_home(folder: Path, rebuild: bool = False) -> Path:
    """A benchmark's cached Candor home, `folder/home` (emptied first when `rebuild`)."""
    if rebuild and folder.exists():
        shutil.rmtree(folder)
    (folder / "home").mkdir(parents=True, exist_ok=True)
    return folder / "home"
