"""Shared set-up for the benchmarks: the SQuAD subset as a knowledge base, timing helpers, and
`candor serve` as a process of its own for the chat-platform load benchmarks."""

from __future__ import annotations

import ast
import asyncio
import csv
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rag.insights.evaluation.golden import load_golden

T = TypeVar("T")

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


# --- `candor serve` under load (slack_load.py, teams_load.py) ------------------------------------


def golden_questions() -> list[str]:
    """The questions of sample/dev.yaml and sample/golden.yaml, in file order."""
    return [item.question for name in ("dev", "golden") for item in load_golden(REPO / "sample" / f"{name}.yaml")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def prepare_handbook() -> Path:
    """The cached handbook home (benchmarks/handbook_kb.py), its knowledge base ingested and up to date."""
    from benchmarks import handbook_kb  # imports this module
    from rag.config import load_settings
    from rag.runtime import open_candor

    home = handbook_kb.prepare_home()
    async with open_candor(load_settings(home=home, database_url=None)) as candor:
        await handbook_kb.ensure_handbook(candor)
    return home


def access_policy(path: Path, platform: str, knowledge_bases: Sequence[str]) -> Path:
    """A `CANDOR_ACCESS_POLICY` file at `path`: questions from `platform` read only `knowledge_bases`."""
    listed = ", ".join(f'"{kb}"' for kb in knowledge_bases)
    path.write_text(f"- platform: {platform}\n  knowledge_bases: [{listed}]\n", encoding="utf-8")
    return path


@contextmanager
def candor_serve(home: Path, env: Mapping[str, str], log: Path) -> Iterator[str]:
    """`candor serve` over `home` as its own process on a free port, once /healthz answers; its base URL.

    The environment is this one without any CANDOR_, SLACK_ or MICROSOFT_ variable, plus `env`; the
    server's stderr goes to `log`. Stopped with SIGTERM (it drains the answers in flight) on the way out."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CANDOR_", "SLACK_", "MICROSOFT_"))}
    clean.update(CANDOR_HOME=str(home), HF_HUB_OFFLINE="1", **env)
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "serve", "--port", str(port)],
            env=clean,
            cwd=home.parent,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                    break
            except OSError:
                if process.poll() is not None:
                    raise SystemExit(f"candor serve exited:\n{log.read_text(errors='replace')}") from None
                if time.monotonic() > deadline:
                    raise SystemExit(f"candor serve did not come up (its stderr: {log})") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


async def in_own_process(function: Callable[..., T], *args: object) -> T:
    """`function(*args)` in a fresh (spawned) process: a load generator that nothing else in this process
    slows down. Its `time.monotonic()` is the same system-wide clock as this process's."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return await asyncio.get_running_loop().run_in_executor(pool, function, *args)


def median_of_runs(results: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs."""
    return {key: statistics.median(r[key] for r in results) for key in results[0]}
