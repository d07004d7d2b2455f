"""Verifier benchmark: balanced accuracy per perturbation type, for every `Verifier` implementation.

Labelled (sentence, evidence) pairs:

- from the sample handbook (the cached handbook home of `handbook_kb.py`): every readable stored
  sentence that states a value or a name is a supported claim against its chunk; systematic
  perturbations of it are unsupported claims against the same chunk: number, unit, date,
  negation, entity swap (a sibling product, plan, variant or collector), scope ("every plan" for
  one plan), qualifier ("always" or "guaranteed" added); rule-based paraphrases
  that stay supported are supported claims;
- from ../shared/data/ramdocs: the sentence of a `correct` document that contains a gold answer is
  a supported claim against that document; the same sentence with the gold answer replaced by one
  of the question's `wrong_answers` (what its `misinfo` documents plant) is unsupported.

For a perturbation type T, balanced accuracy = (share of the T-perturbed claims rejected + share of
their original claims accepted) / 2. The paraphrase row reports acceptance only.

    python benchmarks/verifier.py [--ramdocs 300] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb
from benchmarks.common import RAMDOCS
from rag.backends.vector_cache import CachedEmbedder
from rag.config import load_settings
from rag.ingest.sentences import split_sentences
from rag.model.ports import Verifier
from rag.pipeline.critic import EvidenceVerifier
from rag.runtime import open_candor
from rag.text.facts import clean_sentence, values
from rag.text.names import names
from rag.text.quotable import readable

SIBLINGS = [
    ("Beacon Pro", "Beacon"),
    ("Starter", "Team"),
    ("Team", "Business"),
    ("Business", "Starter"),
    ("NW-200X", "NW-200"),
    ("primary", "secondary"),
    ("domestic", "international"),
    ("monthly", "annual"),
    ("Leeds", "London"),
    ("Priya Raman", "Tomasz Nowak"),
]
UNITS = [
    ("days", "weeks"),
    ("weeks", "months"),
    ("hours", "minutes"),
    ("minutes", "hours"),
    ("seconds", "minutes"),
    ("per month", "per year"),
    ("per day", "per week"),
    ("users", "monitors"),
    ("$", "£"),
    ("£", "$"),
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
VERBS = re.compile(
    r"\b(receive|cost|include|support|keep|run|allow|offer|send|require|cover|appl|take|own|get|use|wait)(s|ies)\b"
)
PARAPHRASES = [
    (r"\breceive\b", "get"),
    (r"\breceives\b", "gets"),
    (r"\bmust be\b", "has to be"),
    (r"\bup to\b", "at most"),
    (r"\bis required\b", "is needed"),
    (r"\bat least\b", "no fewer than"),
    (r"\bcosts\b", "is priced at"),
    (r"\bsupports\b", "allows"),
]
AUXILIARIES = re.compile(r"\b(is|are|must|can|will|may|should|was|were)\b")


@dataclass(frozen=True, slots=True)
class Pair:
    kind: str
    """"original", "paraphrase" or a perturbation type."""
    source: str
    claim: str
    evidence: str
    supported: bool
    origin: int
    """Index of the original claim it was made from (originals point at themselves)."""


def perturb_number(s: str) -> str | None:
    m = re.search(r"\d+(?:,\d{3})*(?:\.\d+)?", s)
    if not m:
        return None
    digits = m.group(0).replace(",", "")
    new = str(int(float(digits)) * 2 if float(digits) >= 1 else 3)
    return s[: m.start()] + new + s[m.end() :]


def perturb_unit(s: str) -> str | None:
    for old, new in UNITS:
        if re.search(r"\d[\d,.]*\s?" + re.escape(old) if old.isalpha() or " " in old else re.escape(old) + r"\d", s):
            return s.replace(old, new, 1)
    return None


def perturb_date(s: str) -> str | None:
    for i, month in enumerate(MONTHS):
        if re.search(rf"\b{month}\b", s):
            return re.sub(rf"\b{month}\b", MONTHS[(i + 5) % 12], s, count=1)
    m = re.search(r"\b(19|20)\d{2}\b", s)
    if m:
        return s[: m.start()] + str(int(m.group(0)) - 3) + s[m.end() :]
    return None


def perturb_negation(s: str) -> str | None:
    if re.search(r"\bnot\b", s):
        return re.sub(r"\s+not\b", "", s, count=1)
    if re.search(r"\bno\b", s):
        return re.sub(r"\bno\b", "a", s, count=1)
    m = AUXILIARIES.search(s)
    if m:
        return s[: m.end()] + " not" + s[m.end() :]
    v = VERBS.search(s)
    if v:
        base = v.group(1) + ("y" if v.group(2) == "ies" else "")
        return s[: v.start()] + f"does not {base}" + s[v.end() :]
    return None


def perturb_entity(s: str) -> str | None:
    for a, b in SIBLINGS:
        for old, new in ((a, b), (b, a)):
            if re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", s):
                if old == "Beacon" and "Beacon Pro" in s:
                    continue
                return re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, s, count=1)
    return None


def perturb_scope(s: str) -> str | None:
    m = re.search(r"\b[Tt]he (Starter|Team|Business) plan\b", s)
    if m:
        return s[: m.start()] + ("Every plan" if m.start() == 0 else "every plan") + s[m.end() :]
    m = re.search(r"\b[Tt]he (primary|secondary) carer\b", s)
    if m:
        return s[: m.start()] + ("Every carer" if m.start() == 0 else "every carer") + s[m.end() :]
    return None


def perturb_qualifier(s: str) -> str | None:
    """A promise widened by one added word, every value kept: "always" after the first auxiliary
    ("are reimbursed" -> "are always reimbursed"), else "guaranteed" before the first number.
    "always" is not in the critic's list of strong qualifiers (rag/text/claims.py); "guaranteed" is."""
    m = AUXILIARIES.search(s)
    if m and not re.match(r"\s+(not|never|always)\b", s[m.end() :]):
        return s[: m.end()] + " always" + s[m.end() :]
    m = re.search(r"\b\d", s)
    if m:
        return s[: m.start()] + "a guaranteed " + s[m.start() :]
    return None


def paraphrase(s: str) -> str | None:
    for pattern, new in PARAPHRASES:
        if re.search(pattern, s):
            return re.sub(pattern, new, s, count=1)
    return None


PERTURBATIONS: dict[str, Callable[[str], str | None]] = {
    "number": perturb_number,
    "unit": perturb_unit,
    "date": perturb_date,
    "negation": perturb_negation,
    "entity swap": perturb_entity,
    "scope": perturb_scope,
    "qualifier": perturb_qualifier,
}


def handbook_pairs(rows: Sequence[tuple[str, str]]) -> list[Pair]:
    pairs: list[Pair] = []
    for sentence, chunk in rows:
        claim = clean_sentence(sentence)
        if not readable(claim) or not (values(claim) or names(claim)):
            continue
        origin = len(pairs)
        pairs.append(Pair("original", "handbook", claim, chunk, True, origin))
        for kind, make in PERTURBATIONS.items():
            changed = make(claim)
            if changed and changed != claim:
                pairs.append(Pair(kind, "handbook", changed, chunk, False, origin))
        same = paraphrase(claim)
        if same and same != claim:
            pairs.append(Pair("paraphrase", "handbook", same, chunk, True, origin))
    return pairs


def ramdocs_pairs(limit: int, seed: int = 7) -> list[Pair]:
    pairs: list[Pair] = []
    rng = random.Random(seed)
    for line in RAMDOCS.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        wrong = [w for w in item.get("wrong_answers", []) if w]
        if not wrong:
            continue
        for doc in item["documents"]:
            if doc["type"] != "correct":
                continue
            text = " ".join(doc["text"].split())
            found = next(
                ((s, g) for s in split_sentences(text) for g in item["gold_answers"] if g and g in s and len(s) < 400),
                None,
            )
            if found is None:
                continue
            sentence, gold = found
            replacement = rng.choice(wrong)
            if replacement in text:
                continue
            origin = len(pairs)
            pairs.append(Pair("original", "ramdocs", sentence, text, True, origin))
            pairs.append(Pair("misinfo answer", "ramdocs", sentence.replace(gold, replacement), text, False, origin))
            break
        if len(pairs) >= 2 * limit:
            break
    return pairs


def combine(*groups: Sequence[Pair]) -> list[Pair]:
    """One list; each pair's `origin` shifted to index the combined list."""
    out: list[Pair] = []
    for group in groups:
        offset = len(out)
        out.extend(replace(p, origin=p.origin + offset) for p in group)
    return out


async def judge(verifier: Verifier, pairs: Sequence[Pair]) -> list[bool]:
    return [(await verifier.verify(p.claim, [p.evidence])).passed for p in pairs]


def table(pairs: Sequence[Pair], verdicts: Sequence[bool]) -> list[dict[str, object]]:
    accepted_original = {i: verdicts[i] for i, p in enumerate(pairs) if p.kind == "original"}
    by_kind: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        if p.kind != "original":
            by_kind[(p.source, p.kind)].append(i)
    rows: list[dict[str, object]] = []
    for (source, kind), indexes in sorted(by_kind.items()):
        originals = sorted({pairs[i].origin for i in indexes})
        kept = sum(accepted_original[o] for o in originals)
        if kind == "paraphrase":
            accepted = sum(verdicts[i] for i in indexes)
            rows.append({"source": source, "type": kind, "pairs": len(indexes), "accepted": accepted})
            continue
        rejected = sum(not verdicts[i] for i in indexes)
        tpr, tnr = kept / len(originals), rejected / len(indexes)
        rows.append(
            {
                "source": source,
                "type": kind,
                "pairs": len(indexes),
                "rejected": rejected,
                "originals_accepted": kept,
                "originals": len(originals),
                "balanced_accuracy": round((tpr + tnr) / 2, 3),
            }
        )
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ramdocs", type=int, default=300, help="RAMDocs questions to draw pairs from")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    settings = load_settings(home=handbook_kb.prepare_home(), database_url=None)
    async with open_candor(settings) as candor:
        await handbook_kb.ensure_handbook(candor)
        rows = await candor.store.fetch_all(
            "SELECT s.text, c.text FROM sentences s JOIN chunks c ON c.id = s.chunk_id "
            "JOIN knowledge_bases kb ON kb.id = c.kb_id WHERE kb.name = %(kb)s ORDER BY c.id, s.position",
            {"kb": handbook_kb.KB},
        )
        pairs = combine(handbook_pairs([(r[0], r[1]) for r in rows]), ramdocs_pairs(args.ramdocs))
        verifiers: list[Verifier] = [EvidenceVerifier(CachedEmbedder(candor.embedder))]
        results = {}
        for verifier in verifiers:
            results[verifier.name] = table(pairs, await judge(verifier, pairs))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, rows_ in results.items():
        print(f"{name}: {len(pairs)} pairs, {time.perf_counter() - started:.0f}s")
        for row in rows_:
            if row["type"] == "paraphrase":
                print(f"  {row['source']:<9} {row['type']:<15} accepted {row['accepted']}/{row['pairs']}")
            else:
                print(
                    f"  {row['source']:<9} {row['type']:<15} balanced accuracy {row['balanced_accuracy']:.3f}  "
                    f"(rejected {row['rejected']}/{row['pairs']}, originals accepted "
                    f"{row['originals_accepted']}/{row['originals']})"
                )
    print("reproduce: HF_HUB_OFFLINE=1 python benchmarks/verifier.py")


if __name__ == "__main__":
    asyncio.run(main())
