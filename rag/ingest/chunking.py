"""Cut a `ParsedDocument` into heading-aware chunks that fit the embedder's window.

A chunk belongs to one heading path and never holds half a list item or half a table row:
those move whole to the next chunk (one larger than `max_tokens` becomes a chunk of its own).
Paragraphs too long for one chunk are cut at sentence boundaries, sentences too long at word
boundaries. Each section is packed into as few chunks as greedy packing needs, then evened out
(the limit lowered as far as that count allows, units shifted forward from fuller chunks), so a
section does not end on a tiny remainder chunk.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from rag.errors import ConfigError
from rag.ingest.blocks import Block, BlockKind, ChunkDraft, ParsedDocument
from rag.ingest.sentences import split_sentences

__all__ = ["Chunker", "estimate_tokens"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
"""Kana, CJK ideographs and Hangul: written without spaces, and about a word piece per character."""
_WORDISH = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
_MIN_TOKENS = 8
_WHOLE_KINDS: frozenset[BlockKind] = frozenset({"list_item", "table_row"})
_T = TypeVar("_T")


def estimate_tokens(text: str) -> int:
    """A cheap word-piece estimate: words, CJK characters and punctuation marks, times 1.3, rounded up."""
    return math.ceil(len(_WORDISH.findall(text)) * 1.3)


@dataclass(frozen=True, slots=True)
class _Unit:
    """What the packer moves around whole: a paragraph (or a part of one), an item, a row."""

    kind: BlockKind
    line: str
    """The unit as it reads in chunk text ("- " before list items)."""
    sentences: tuple[str, ...]


class Chunker:
    """Packs a document's blocks into `ChunkDraft`s of at most `max_tokens` tokens.

    `overlap_sentences` repeats that many trailing sentences of the previous chunk (same heading
    path only) at the start of the next one; content is then packed to three quarters of
    `max_tokens` to leave them room, and those that still do not fit are left out. They are part
    of the chunk's text but not of its `sentences`, so each sentence is embedded once.
    `count_tokens` is the embedder's tokenizer when it is at hand; the default is
    `estimate_tokens`.
    """

    def __init__(
        self,
        max_tokens: int = 200,
        overlap_sentences: int = 0,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise ConfigError(f"max_tokens must be an integer, got {max_tokens!r}")
        if max_tokens < _MIN_TOKENS:
            raise ConfigError(f"max_tokens must be at least {_MIN_TOKENS}, got {max_tokens}")
        if isinstance(overlap_sentences, bool) or not isinstance(overlap_sentences, int):
            raise ConfigError(f"overlap_sentences must be an integer, got {overlap_sentences!r}")
        if overlap_sentences < 0:
            raise ConfigError(f"overlap_sentences must be 0 or more, got {overlap_sentences}")
        if count_tokens is not None and not callable(count_tokens):
            raise ConfigError("count_tokens must be a callable taking a string")
        self.max_tokens = max_tokens
        self.overlap_sentences = overlap_sentences
        self.count_tokens = count_tokens or estimate_tokens

    def chunk(self, doc: ParsedDocument) -> list[ChunkDraft]:
        """The document's chunks in reading order, positions 0..n-1."""
        reserve = self.max_tokens // 4 if self.overlap_sentences else 0
        packer = _Packer(self.max_tokens - reserve, self.count_tokens)
        drafts: list[ChunkDraft] = []
        for path, blocks in _sections(doc.blocks):
            units = [unit for block in blocks for unit in packer.units(block)]
            previous: tuple[str, ...] = ()
            for group in packer.pack(units):
                lines = [unit.line for unit in group]
                sentences = tuple(sentence for unit in group for sentence in unit.sentences)
                carried = list(previous[max(len(previous) - self.overlap_sentences, 0) :])
                while carried and not packer.fits([" ".join(carried), *lines], self.max_tokens):
                    carried.pop(0)
                text = "\n".join([" ".join(carried), *lines] if carried else lines)
                drafts.append(ChunkDraft(len(drafts), path, text, sentences))
                previous = sentences
        return drafts


def _sections(blocks: list[Block]) -> Iterator[tuple[tuple[str, ...], list[Block]]]:
    """Runs of non-heading blocks with the heading path they sit under; each heading starts one."""
    stack: list[tuple[int, str]] = []
    body: list[Block] = []
    for block in blocks:
        if block.kind != "heading":
            body.append(block)
            continue
        if body:
            yield tuple(text for _, text in stack), body
            body = []
        level = max(block.level, 1)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, block.text))
    if body:
        yield tuple(text for _, text in stack), body


class _Packer:
    """Token-budget arithmetic for one `chunk` call (counts are cached: packing re-asks a lot)."""

    def __init__(self, max_tokens: int, count_tokens: Callable[[str], int]) -> None:
        self.max_tokens = max_tokens
        self._count_tokens = count_tokens
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = self._count_tokens(text)
        return self._counts[text]

    def fits(self, lines: list[str], limit: int | None = None, sep: str = "\n") -> bool:
        return self.count(sep.join(lines)) <= (self.max_tokens if limit is None else limit)

    def units(self, block: Block) -> list[_Unit]:
        """A block as packable units; only paragraphs and code are ever cut."""
        text = block.text.strip("\n") if block.kind == "code" else block.text.strip()
        if not text.strip():
            return []
        if block.kind == "list_item":
            indent = "  " * max(block.level - 1, 0)
            return [_Unit(block.kind, f"{indent}- {text}", (text,))]
        if block.kind == "table_row" or (block.kind == "code" and self.fits([text])):
            return [_Unit(block.kind, text, (text.strip(),))]
        if block.kind == "code":
            lines = [piece for line in text.splitlines() for piece in self._words(line)]
            pieces = ["\n".join(group) for group in self._balance(lines, "\n")]
            return [_Unit("code", piece, (piece.strip(),)) for piece in pieces if piece.strip()]
        sentences = split_sentences(text)
        if self.fits([text]):
            return [_Unit(block.kind, text, tuple(sentences))]
        pieces = [piece for sentence in sentences for piece in self._words(sentence)]
        return [_Unit(block.kind, " ".join(group), tuple(group)) for group in self._balance(pieces, " ")]

    def pack(self, units: list[_Unit]) -> list[list[_Unit]]:
        """Units grouped into chunks: greedy, then evened out with the same number of chunks."""
        lines = [unit.line for unit in units]
        starts = self._greedy(lines, self.max_tokens, "\n", units)
        return _split(units, self._evened(lines, starts, "\n", units))

    def _balance(self, pieces: list[str], sep: str) -> list[list[str]]:
        starts = self._greedy(pieces, self.max_tokens, sep)
        return _split(pieces, self._evened(pieces, starts, sep))

    def _evened(self, pieces: list[str], starts: list[int], sep: str, units: list[_Unit] | None = None) -> list[int]:
        """Group starts for as many groups as `starts`, but as even as they can be.

        First the lowest limit that greedy packing can meet with that many groups, then, from
        the end, pieces move forward while the receiving group stays no larger than the giver.
        """
        if len(starts) < 2:
            return starts
        low, high = 1, self.max_tokens
        while low < high:
            middle = (low + high) // 2
            if len(self._greedy(pieces, middle, sep, units)) <= len(starts):
                high = middle
            else:
                low = middle + 1
        evened = self._greedy(pieces, low, sep, units)
        if len(evened) > len(starts):
            evened = list(starts)
        ends = [*evened[1:], len(pieces)]
        for group in range(len(evened) - 1, 0, -1):
            while evened[group] - evened[group - 1] > 1:
                start = evened[group] - 1
                giver, taker = pieces[evened[group - 1] : start], pieces[start : ends[group]]
                if units and _is_lead_in(units, start - 1):
                    break
                if not self.fits(taker, sep=sep) or self.count(sep.join(taker)) > self.count(sep.join(giver)):
                    break
                evened[group] = ends[group - 1] = start
        return evened

    def _greedy(self, pieces: list[str], limit: int, sep: str, units: list[_Unit] | None = None) -> list[int]:
        """Start indexes of greedy groups of `pieces` under `limit` tokens.

        With `units`, a lead-in paragraph (ending with ":") that could open a chunk together
        with the list item or table row after it is not left alone at the end of a chunk.
        """
        starts: list[int] = []
        for index, piece in enumerate(pieces):
            need = [piece]
            if units and _is_lead_in(units, index):
                with_item = [piece, pieces[index + 1]]
                need = with_item if self.fits(with_item, limit, sep) else need
            if not starts or not self.fits([*pieces[starts[-1] : index], *need], limit, sep):
                starts.append(index)
        return starts

    def _words(self, text: str) -> list[str]:
        """`text` if it fits, else runs of whole words (a word too long is cut between letters)."""
        if self.fits([text]):
            return [text]
        words: list[str] = []
        for word in text.split():
            if self.fits([word]):
                words.append(word)
            else:
                chars = list(word)
                runs = _split(chars, self._greedy(chars, self.max_tokens, ""))
                words.extend("".join(run) for run in runs)
        return [" ".join(group) for group in self._balance(words, " ")]


def _split(items: list[_T], starts: list[int]) -> list[list[_T]]:
    """`items` cut before each index in `starts` (which begins with 0 unless `items` is empty)."""
    return [items[start:end] for start, end in zip(starts, [*starts[1:], len(items)], strict=False)]


def _is_lead_in(units: list[_Unit], index: int) -> bool:
    """A paragraph ending with ":" right before a list item or table row."""
    following = units[index + 1] if index + 1 < len(units) else None
    lead = units[index]
    is_lead = lead.kind == "paragraph" and lead.line.endswith(":")
    return is_lead and following is not None and following.kind in _WHOLE_KINDS
