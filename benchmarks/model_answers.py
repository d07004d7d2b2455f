"""Candor with a real language model writing, against naive RAG on the same model (issue 38).

Opt-in: this needs a real model server and hours of CPU; it is never part of the default test
suite. Start the model first (`python scripts/local_model.py serve --model qwen-1.5b --port 8090
--threads 2`, OpenAI-compatible on http://127.0.0.1:8090/v1), then:

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/model_answers.py --set handbook --system naive
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/model_answers.py --set handbook --system candor-model
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/model_answers.py --set handbook --system offline
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/model_answers.py --report

Systems, each over the same blind corpus (eval/blind/<set>/docs, its own cached Candor home,
knowledge base "<set>") and golden file:

- `offline`: Candor with its defaults (the extractive writer); no model.
- `candor-model`: Candor with `CANDOR_WRITER=openai:<model>` on `--base-url`, everything else
  default except the model's time limits (`--llm-timeout`, `--answer-budget`: Candor's 30 s / 60 s
  defaults are shorter than one answer of a 1.5B model on 2 cores, and the writer would fall back).
- `naive`: the fallback the issue allows, not LangChain (its venv needs torch and the LangChain
  stack installed beside Candor's; not built here): Candor's own hybrid search, top 4 passages,
  their text joined as the context of LangChain's standard RAG prompt (`rlm/rag-prompt`, worded as
  below), one chat call to the same model at temperature 0. An answer whose every sentence says it
  does not know is an abstention; every other sentence cites all four passages.

Answers are cached as JSON lines in benchmarks/.cache/model_answers/<set>-<system>.jsonl keyed by
(commit, set, question id, system, model): a rerun asks only what is missing. `--report` scores the
cache with `candor eval`'s scorer (rag/insights/evaluation/run.py: keywords, conflicts, parts) plus:

- right = golden keywords present and no stale value stated as fact (a conflict question's stale
  value in an asserted, non-disputed sentence that does not also give the preferred value);
- unsupported (independent of Candor's critic): a delivered sentence with a number, amount,
  duration, percentage, date or product code whose values and capitalised names no one sentence of
  its cited passages states together, units read alike ("per kilometre" = "per km", "2 weeks" = "14
  days", "€40" = "40 EUR"): a value the passage gives beside another thing does not count. Checked
  against the blind labels of eval/verifier/ (`benchmarks/model_sentences.py --scorer`).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, cached_home, percentile
from benchmarks.squad_kb import code_version
from rag.config import load_settings, offline_model_environment
from rag.insights.evaluation.golden import GoldenItem, load_golden
from rag.insights.evaluation.run import Scored, score_question
from rag.model.answers import Answer, AnswerSentence, Conflict, ModelCall, Question, Route, Source
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor

REPO = Path(__file__).resolve().parents[1]
BLIND = REPO / "eval" / "blind"
ANSWERS = CACHE / "model_answers"
SETS = (
    "handbook",
    "campus",
    "helpcentre",
    "servicedesk",
    "utility",
    "clinic",
    "bank",
    "sellers",
    "hardware",
    "saas",
    "transit",
    "tasks",
)
SYSTEMS = ("naive", "langchain", "candor-model", "offline")
BASELINES = ("naive", "langchain")
"""Systems without Candor's gates on their path: their answers stand across Candor's commits."""
MODEL = "qwen2.5-coder-1.5b-instruct"
BASE_URL = "http://127.0.0.1:8090/v1"
NAIVE_K = 4
NAIVE_PROMPT = (
    "You are an assistant for question-answering tasks. Answer the question using only the context below. "
    "If the context does not contain the answer, just say that you don't know. "
    "Use three sentences maximum and keep the answer concise.\n\nQuestion: {question}\n\nContext:\n{context}\n\nAnswer:"
)
REFUSAL = re.compile(
    r"\b(?:don't|do not|does not|doesn't) (?:know|contain|mention|provide|include|specify|say)|\bno information\b"
    r"|\bnot (?:mentioned|specified|provided|stated)\b|\b(?:cannot|can't|unable to) (?:answer|find|determine)",
    re.IGNORECASE,
)


# --- asking ------------------------------------------------------------------------------------


def scope_of(item: GoldenItem, kb: str) -> AccessScope:
    return AccessScope(frozenset(item.required_access), frozenset({kb}))


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(€$£])|\n+", text) if s.strip()]


async def naive_answer(candor: Candor, client: Any, model: str, item: GoldenItem, kb: str) -> Answer:
    """Top-4 hybrid search, one chat call; refusal sentences are not delivered, the rest cite all passages."""
    passages = await candor.search(item.question, scope_of(item, kb), k=NAIVE_K)
    context = "\n\n".join(p.text for p in passages)
    started = time.perf_counter()
    response = await client.chat.completions.create(
        model=model,
        temperature=0.0,
        max_tokens=512,
        messages=[{"role": "user", "content": NAIVE_PROMPT.format(question=item.question, context=context)}],
    )
    ms = (time.perf_counter() - started) * 1000
    usage = response.usage
    prompt, completion = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
    sources = tuple(
        Source(n, p.document, p.title, p.heading, p.text, p.score, p.url, p.effective_date, p.chunk_id, p.document_id)
        for n, p in enumerate(passages, 1)
    )
    call = ModelCall("naive", model, prompt, completion, ms, "ok")
    return chain_answer(item.question, (response.choices[0].message.content or "").strip(), sources, call)


def chain_answer(question: str, text: str, sources: Sequence[Source], call: ModelCall) -> Answer:
    """A baseline's reply as an `Answer`: refusal sentences are not delivered, the rest cite every
    passage the model was given; nothing delivered is an abstention."""
    cited = tuple(range(1, len(sources) + 1))
    sentences = tuple(AnswerSentence(s, cited) for s in split_sentences(text) if not REFUSAL.search(s))
    route: Route = "answered" if sentences else "abstained"
    return Answer(question, route, text, sentences, tuple(sources), timings_ms={"total": call.ms}, model_calls=(call,))


def langchain_answers(args: argparse.Namespace, todo: Sequence[GoldenItem]) -> Iterable[tuple[GoldenItem, Answer]]:
    """LangChain's standard retrieval chain, run from its own venv (benchmarks/langchain_baseline.py
    `rag`: the tutorial's splitter, PGVectorStore, top 4, the tutorial's prompt, ChatOpenAI on the
    same server). It has no access control: a restricted document is as readable as any."""
    if args.langchain_python is None:
        raise SystemExit("--system langchain needs --langchain-python (the venv of benchmarks/langchain_baseline.py)")
    raw = ANSWERS / f"{args.set}-langchain.raw.jsonl"
    asked = ANSWERS / f"{args.set}-langchain.questions.json"
    asked.write_text(json.dumps([{"id": i.id, "question": i.question} for i in todo]), encoding="utf-8")
    script = REPO / "benchmarks" / "langchain_baseline.py"
    command = [str(args.langchain_python), str(script), "rag", "--docs", str(BLIND / args.set / "docs")]
    command += ["--questions", str(asked), "--base-url", args.base_url, "--model", args.model, "--out", str(raw)]
    subprocess.run(command, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    lines = {r["id"]: r for r in read_rows([raw])}
    for item in todo:
        line = lines[item.id]
        sources = tuple(
            Source(n, p["source"], Path(p["source"]).name, "", p["text"], 0.0, None, None, 0, 0)
            for n, p in enumerate(line["passages"], 1)
        )
        call = ModelCall("langchain", args.model, 0, 0, line["seconds"] * 1000, "ok")
        yield item, chain_answer(item.question, line["answer"].strip(), sources, call)


def row_of(key: dict[str, str], answer: Answer, seconds: float) -> dict[str, Any]:
    """One cached line: the key, what the scorer needs (the whole answer, cited passages included as
    `answer.sources[].excerpt`), latency, tokens and the gates' first-pass and retry outcomes."""
    # the model's attempts only (a `writer` gate: the model wrote, or failed and the fallback did);
    # with the extractive writer first, they follow its attempts, as the report counts them
    written = {g.attempt for g in answer.gates if g.gate == "writer"}
    first = min(written, default=None)
    faith = [g for g in answer.gates if g.gate == "faithfulness" and g.attempt in written]
    last = max(written, default=first)
    calls = answer.model_calls
    return {
        **key,
        "route": answer.route,
        "abstained": answer.abstained,
        "latency_s": round(seconds, 2),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "model_calls": len(calls),
        "first_pass_rejected": None if not faith else any(g.attempt == first and not g.passed for g in faith),
        "retried": last != first,
        "retry_resolved": None if last == first else any(g.attempt == last and g.passed for g in faith),
        "writer_fallback": [g.details.get("fallback") for g in answer.gates if g.gate == "writer" and not g.passed],
        "model_errors": sorted({c.error for c in calls if c.error}),
        "modes": sorted({c.mode for c in calls if c.mode}),
        "answer": answer.as_json(),
    }


def set_home(name: str) -> Path:
    """The set's cached Candor home, one per folder its documents are read from. A document is known
    by its path, and a prune removes only what is gone from under the folders ingested: a checkout
    elsewhere (a git worktree) ingesting into the same home would add every document a second time,
    and the doubled base moves the scores (a word no chunk holds weighs 1/chunks)."""
    docs = (BLIND / name / "docs").resolve()
    return cached_home(CACHE / f"model-answers-{name}-{hashlib.sha256(str(docs).encode()).hexdigest()[:8]}")


def cache_file(name: str, system: str) -> Path:
    return ANSWERS / f"{name}-{system}.jsonl"


def read_rows(paths: Iterable[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths if path.exists() for line in path.read_text().splitlines() if line]


def key_of(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row[k]) for k in ("commit", "set", "id", "system", "model"))


async def run(args: argparse.Namespace) -> None:
    offline_model_environment()
    model = "extractive" if args.system == "offline" else args.model
    items = load_golden(BLIND / args.set / "golden.yaml")[: args.limit]
    commit = code_version()
    system = f"{args.system}+{args.variant}" if args.variant else args.system
    path = cache_file(args.set, system)
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"commit": commit, "set": args.set, "system": system, "model": model}
    if args.system in BASELINES:  # Candor's gates are not on their path: their answers stand across commits
        done = {r["id"] for r in read_rows([path]) if r["model"] == model}
        todo = [i for i in items if i.id not in done]
    else:
        done_keys = {key_of(r) for r in read_rows([path])}
        todo = [i for i in items if key_of({**base, "id": i.id}) not in done_keys]
    print(f"{args.set}/{args.system}/{model} @ {commit}: {len(items) - len(todo)} cached, {len(todo)} to ask")
    if not todo:
        return
    if args.system == "langchain":
        for item, answer in langchain_answers(args, todo):
            row = row_of({**base, "id": item.id}, answer, answer.timings_ms["total"] / 1000)
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    overrides: dict[str, object] = {"home": set_home(args.set), "database_url": None}
    if args.system == "candor-model":
        overrides |= {"writer": f"openai:{model}", "openai_base_url": args.base_url, "openai_api_key": "local"}
        overrides |= {"llm_timeout": args.llm_timeout, "answer_budget": args.answer_budget}
    client = None
    if args.system == "naive":
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=args.base_url, api_key="local", timeout=args.llm_timeout, max_retries=1)
    async with open_candor(load_settings(**overrides)) as candor:
        await candor.warm_up()
        ingested = await candor.ingest([BLIND / args.set / "docs"], kb=args.set, prune=True)
        print(f"ingested {args.set}: {ingested.added} added, {ingested.unchanged} unchanged", flush=True)
        for n, item in enumerate(todo, 1):
            started = time.perf_counter()
            if client is not None:
                answer = await naive_answer(candor, client, model, item, args.set)
            else:
                answer = await candor.answer(Question(item.question, scope=scope_of(item, args.set), platform="eval"))
            row = row_of({**base, "id": item.id}, answer, time.perf_counter() - started)
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"  [{n}/{len(todo)}] {item.id}: {row['route']} in {row['latency_s']:.0f}s", flush=True)


# --- the independent value check ---------------------------------------------------------------

_MONTHS = "january february march april may june july august september october november december".split()  # noqa: SIM905
_MONTH = "|".join(m[:3] + f"(?:{m[3:]})?" for m in _MONTHS)
_DATE = re.compile(
    rf"\b(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b|\b(?P<d1>\d{{1,2}})(?:st|nd|rd|th)? (?P<m1>{_MONTH})\.?,? (?P<y1>\d{{4}})\b"
    rf"|\b(?P<m2>{_MONTH})\.? (?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<y2>\d{{4}})\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"\b(?=[\w.+-]*\d)[A-Za-z][\w]*(?:[-.+][\w]+)+\+?|\bv\d+(?:\.\d+)+\b")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_NUMBER_WORDS = {w: float(i) for i, w in enumerate(_WORDS)} | {"fifteen": 15.0, "twenty": 20.0, "thirty": 30.0}
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?|(?:" + "|".join(_NUMBER_WORDS) + r")\b"
_VALUE = re.compile(
    rf"(?P<pre>€|\$|£|\b(?:EUR|USD|GBP|CHF|PLN|SEK)\b)?\s?(?<![\w.,])(?P<num>{_NUM})(?![\w.,]\d)"
    r"(?:[\s-]?(?P<unit>%|per ?cent\b|(?!(?:per|a|an|each)\b)(?:(?:working|business|calendar)\s)?[A-Za-z]+\b))?"
    r"(?:(?:\s(?:per|a|an|each)\s|\s?/\s?)(?P<per>[A-Za-z]+))?",
    re.IGNORECASE,
)
_UNITS = {"%": "%", "percent": "%", "per cent": "%", "percentage": "%", "km": "km", "kilometre": "km"}
_UNITS |= {"kilometer": "km", "mile": "mile"}
_UNITS |= {"kg": "kg", "kilogram": "kg", "gb": "gb", "tb": "tb", "mb": "mb", "h": "hour", "hr": "hour", "min": "minute"}
_UNITS |= {w: w for w in ("hour", "minute", "second", "day", "week", "month", "year", "night")}
_UNITS |= {"€": "eur", "eur": "eur", "euro": "eur", "$": "usd", "usd": "usd", "dollar": "usd", "£": "gbp", "gbp": "gbp"}
_UNITS |= {"pound": "gbp", "chf": "chf", "franc": "chf", "pln": "pln", "zloty": "pln", "sek": "sek", "krona": "sek"}
_DAYS = {"week": 7.0, "day": 1.0}


def _unit(word: str | None) -> str:
    word = (word or "").lower().strip()
    if word.startswith(("working", "business", "calendar")):
        word = word.split()[-1]
    return _UNITS.get(word, _UNITS.get(word.rstrip("s"), _UNITS.get(word.removesuffix("es"), "")))


def facts(text: str) -> set[tuple[str, ...]]:
    """The values a text gives, normalised: ("date", iso), ("code", lower), (unit, number, per)."""
    found: set[tuple[str, ...]] = set()
    for m in _DATE.finditer(text):
        if m["iso"]:
            found.add(("date", m["iso"]))
        else:
            day, month, year = (m["d1"], m["m1"], m["y1"]) if m["d1"] else (m["d2"], m["m2"], m["y2"])
            month_n = next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(month.lower()[:3]))
            found.add(("date", f"{year}-{month_n:02d}-{int(day):02d}"))
    text = _DATE.sub(" ", text)
    found |= {("code", c.lower()) for c in _CODE.findall(text)}
    for m in _VALUE.finditer(_CODE.sub(" ", text)):
        raw = m["num"].lower()
        number = _NUMBER_WORDS[raw] if raw in _NUMBER_WORDS else float(raw.replace(",", ""))
        unit = _unit(m["pre"]) or _unit(m["unit"])
        if unit in _DAYS:
            number, unit = number * _DAYS[unit], "day"
        found.add((unit, f"{number:g}", _unit(m["per"])))
    return found


def supported(fact: tuple[str, ...], given: set[tuple[str, ...]]) -> bool:
    """A date or code given as is; a number given with the same unit (or either without one) and rate."""
    if fact[0] in ("date", "code"):
        return fact in given
    unit, number, per = fact
    return any(
        g[0] not in ("date", "code") and g[1] == number and (not unit or not g[0] or unit == g[0])
        and (not per or not g[2] or per == g[2])
        for g in given
    )  # fmt: skip


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’-]*(?:\s+(?:of|de|the|and)?\s*[A-Z][\w'’-]*)*")
_NOT_NAMES = {"I", "A", "An", "The", "If", "You", "Your", "We", "Our", "It", "This", "That", "Yes", "No"}


def names_in(text: str) -> set[str]:
    """Capitalised words and runs of them after a sentence's first word: the scorer's own reading of
    names, not Candor's (rag/text/names.py)."""
    body = text.strip()
    first = re.match(r"\S+\s*", body)
    body = body[first.end() :] if first else body
    found = {m.group(0).strip() for m in _NAME.finditer(body)}
    return {n for n in found if n not in _NOT_NAMES}


def stands_for(sentence: str, evidence: Sequence[str]) -> bool:
    """Every value and name of `sentence` in one sentence of its evidence, together: a value the
    evidence gives in another sentence, beside another thing, does not count (the first version
    looked anywhere in the passage)."""
    mine, named = facts(sentence), names_in(sentence)
    if not mine:
        return True
    pieces = [p for text in evidence for p in _SPLIT.split(text) if p.strip()]
    for piece in pieces:
        given = facts(piece)
        lowered = piece.lower()
        if all(supported(f, given) for f in mine) and all(n.lower() in lowered for n in named):
            return True
    return False


def unsupported_sentences(answer: Answer) -> tuple[int, int]:
    """(sentences whose values and names no one cited sentence states together, sentences with a
    value) over delivered sentences."""
    if answer.abstained:
        return 0, 0
    text = {s.n: s.excerpt for s in answer.sources}
    bad = valued = 0
    for s in answer.sentences:
        if not facts(s.text):
            continue
        valued += 1
        bad += not stands_for(s.text, [text[n] for n in s.citations if n in text])
    return bad, valued


# --- scoring and the report --------------------------------------------------------------------


def answer_of(data: dict[str, Any]) -> Answer:
    """The `Answer` a cached line holds (what the golden scorer reads of it)."""
    return Answer(
        question=data["question"],
        route=data["route"],
        text=data["text"],
        sentences=tuple(
            AnswerSentence(s["text"], tuple(s["citations"]), s["supported"], s["disputed"]) for s in data["sentences"]
        ),
        sources=tuple(
            Source(s["n"], s["document"], s["title"], s["heading"], s["excerpt"], s["score"]) for s in data["sources"]
        ),
        conflicts=tuple(
            Conflict(c["note"], tuple(c["values"]), tuple(c["sources"]), c["preferred"], c["reason"])
            for c in data["conflicts"]
        ),
        unanswered_parts=tuple(data["unanswered_parts"]),
        parts=tuple(data["parts"]),
        timings_ms=data["timings_ms"],
    )


def _mentions(text: str, value: str) -> bool:
    if re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", text, re.IGNORECASE):
        return True
    wanted = facts(value)
    return bool(wanted) and all(supported(f, facts(text)) for f in wanted)


def stale_as_fact(item: GoldenItem, answer: Answer) -> bool:
    """A conflict question's stale value asserted (not disputed) without the preferred one beside it."""
    if item.conflict is None or answer.abstained:
        return False
    stale, preferred = item.conflict.stale, item.conflict.preferred
    asserted = [s.text for s in answer.sentences if not s.disputed]
    return any(_mentions(text, stale) and not _mentions(text, preferred) for text in asserted)


@dataclass(frozen=True, slots=True)
class Judged:
    row: dict[str, Any]
    scored: Scored
    stale: bool
    unsupported: tuple[int, int]

    @property
    def delivered(self) -> bool:
        return self.scored.route != "abstained"

    @property
    def right(self) -> bool:
        return bool(self.scored.keywords_ok) and not self.stale

    @property
    def wrong(self) -> bool:
        return self.scored.item.answerable and self.delivered and (not self.scored.keywords_ok or self.stale)


def judge(row: dict[str, Any], items: dict[str, GoldenItem]) -> Judged:
    item, answer = items[row["id"]], answer_of(row["answer"])
    scored = score_question(item, answer, [], None)
    return Judged(row, scored, stale_as_fact(item, answer), unsupported_sentences(answer))


def first_pass(row: dict[str, Any], *, drafted: bool) -> bool | None:
    """Whether the model's first draft failed the faithfulness gate with sentences in it (`drafted`:
    the critic rejected what the model gave) or with none (the model chose nothing, as a selector
    does when no sentence answers: an abstention, not a rejection); None where the model was not
    asked. Read from the stored gate log, so cached rows of earlier commits are counted alike."""
    if row["first_pass_rejected"] is None:
        return None
    gates = row["answer"]["gates"]
    first = min(g["attempt"] for g in gates if g["gate"] == "writer")
    faith = [g for g in gates if g["gate"] == "faithfulness" and g["attempt"] == first]
    return any(not g["passed"] and (g["details"]["sentences"] > 0) == drafted for g in faith)


def count(flags: Iterable[bool | None]) -> str:
    values = [f for f in flags if f is not None]
    return f"{sum(values)}/{len(values)}"


def summary(judged: Sequence[Judged]) -> dict[str, str]:
    answerable = [j for j in judged if j.scored.item.answerable]
    rows = [j.row for j in judged]
    seconds = [r["latency_s"] for r in rows]
    tokens = [r["prompt_tokens"] + r["completion_tokens"] for r in rows if r["system"] != "langchain"]  # not told
    return {
        "questions": str(len(judged)),
        "answered": count(j.delivered for j in answerable),
        "right": count(j.right for j in answerable),
        "wrong delivered": count(j.wrong for j in answerable),
        "stale as fact": count(j.stale for j in judged if j.scored.item.conflict),
        "unanswerable abstained": count(not j.delivered for j in judged if not j.scored.item.answerable),
        "conflicts flagged, newer preferred": count(j.scored.conflict_ok for j in judged),
        "false conflict notes": count(j.scored.conflict_flagged for j in judged if not j.scored.item.conflict),
        "multi-part right": count(j.scored.parts_ok for j in judged),
        "unsupported sentences (independent)": f"{sum(j.unsupported[0] for j in judged)}/"
        f"{sum(j.unsupported[1] for j in judged)}",
        "first-pass rejected": count(first_pass(r, drafted=True) for r in rows),
        "first draft empty (the writer abstained)": count(first_pass(r, drafted=False) for r in rows),
        "retry resolved": count(r["retry_resolved"] for r in rows),
        "writer fell back": count(bool(r["writer_fallback"]) for r in rows),
        "latency p50 / p95 s": f"{statistics.median(seconds):.0f} / {percentile(seconds, 95):.0f}" if seconds else "-",
        "tokens per answer": f"{statistics.mean(tokens):.0f}" if tokens else "-",
    }


def report() -> None:
    rows = read_rows(sorted(p for p in ANSWERS.glob("*.jsonl") if not p.name.endswith(".raw.jsonl")))
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:  # a column per system, model and commit (a run that spans a commit shows as two)
        at = "" if row["system"] in BASELINES else f" @ {row['commit']}"
        system = f"{row['system']} ({row['model']}){at}"
        groups.setdefault(row["set"], {}).setdefault(system, []).append(row)
    for name, systems in sorted(groups.items()):
        items = {i.id: i for i in load_golden(BLIND / name / "golden.yaml")}
        table = {system: summary([judge(r, items) for r in group]) for system, group in sorted(systems.items())}
        measures = list(next(iter(table.values())))
        print(f"\n## {name} ({len(items)} questions in the golden file)\n")
        print("| measure | " + " | ".join(table) + " |")
        print("|---|" + "---|" * len(table))
        for measure in measures:
            print(f"| {measure} | " + " | ".join(t[measure] for t in table.values()) + " |")
        errors = {e for group in systems.values() for r in group for e in r["model_errors"]}
        if errors:
            print(f"\nmodel call errors seen: {sorted(errors)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=SETS, default="handbook")
    parser.add_argument("--system", choices=SYSTEMS)
    parser.add_argument("--limit", type=int, default=None, help="the first N golden questions only")
    parser.add_argument("--model", default=MODEL, help="the model alias on the server")
    parser.add_argument("--base-url", default=BASE_URL)
    parser.add_argument("--llm-timeout", type=float, default=600.0, help="seconds per model request")
    parser.add_argument("--answer-budget", type=float, default=1800.0, help="seconds of model time per answer")
    parser.add_argument(
        "--variant",
        default="",
        help="a name for the CANDOR_* settings this run changes (set them in the environment): its answers "
        "are kept and reported apart, as system+variant",
    )
    parser.add_argument("--langchain-python", type=Path, default=None, help="for --system langchain")
    parser.add_argument("--report", action="store_true", help="score the cached answers and print the tables")
    args = parser.parse_args(argv)
    if args.report:
        report()
    elif args.system is None:
        parser.error("--system is required unless --report")
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
