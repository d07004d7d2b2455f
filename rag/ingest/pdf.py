"""PDFs, read within bounds: at most `PdfBounds.max_pages` pages, in at most `PdfBounds.seconds`.

pypdf is pure Python, and a hostile PDF (millions of drawing operators on a page, a page tree of tens
of thousands of pages) keeps it busy for minutes or for ever; a thread cannot be stopped, so
`candor sync` or `candor ingest` would stall on it. Each PDF is therefore read in a worker process
(started from a fork server: one clean, single-threaded process that forks a reader per PDF, cheaply),
which is killed when its time is up. A PDF past either bound is refused with `UnsupportedFile`
naming the bound; the caller skips it and says so (`candor ingest` and `candor sync` print each
skipped document with its reason).
"""

from __future__ import annotations

import io
import multiprocessing
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from pathlib import Path
from typing import Any

import pypdf

from rag.errors import CorruptFile, EmptyFile, IngestError, UnreadableFile, UnsupportedFile
from rag.ingest.blocks import Block, ParsedDocument
from rag.ingest.layout import clean, join_lines, plain_blocks

__all__ = ["PdfBounds", "load_pdf"]

_REFUSALS: Mapping[str, type[IngestError]] = {
    error.__name__: error for error in (CorruptFile, EmptyFile, UnreadableFile, UnsupportedFile)
}
"""The refusals a reader sends back by name (an `IngestError` does not survive pickling whole)."""


@dataclass(frozen=True, slots=True)
class PdfBounds:
    max_pages: int = 2000
    """More pages than this: refused before any text is read."""
    seconds: float = 180.0
    """Reading it (pages and text) takes longer than this: the reader is killed, the PDF refused."""

    def __post_init__(self) -> None:
        if self.max_pages < 1 or self.seconds <= 0:
            raise ValueError("a PDF bound needs at least one page and a positive time")


def load_pdf(path: Path, data: bytes, bounds: PdfBounds) -> ParsedDocument:
    """The blocks of the PDF `data` (the content of `path`), read in a worker process within `bounds`.
    Blocking: run it in a thread."""
    context = _context()
    receiving, sending = context.Pipe(duplex=False)
    reader = context.Process(target=_read, args=(sending, path, data, bounds.max_pages), daemon=True)
    try:
        reader.start()
        sending.close()
        if not receiving.poll(bounds.seconds):
            raise UnsupportedFile(path, f"a PDF whose text could not be read within {bounds.seconds:g} s")
        outcome: tuple[str, Any, str] = receiving.recv()
    except (EOFError, OSError) as exc:  # the reader died (out of memory, a crash in a C extension)
        raise CorruptFile(path, f"the PDF reader stopped ({type(exc).__name__})") from exc
    finally:
        if reader.is_alive():
            reader.kill()
        if reader.pid is not None:
            reader.join()
        receiving.close()
    kind, value, detail = outcome
    if kind == "parsed":
        parsed: ParsedDocument = value
        return parsed
    raise _REFUSALS.get(kind, CorruptFile)(path, detail)


def _read(sending: Connection, path: Path, data: bytes, max_pages: int) -> None:
    """In the reader process: parse, and send back ("parsed", document, "") or (refusal, None, detail)."""
    try:
        sending.send(("parsed", parse_pdf(path, data, max_pages), ""))
    except IngestError as exc:
        sending.send((type(exc).__name__, None, exc.detail))
    except Exception as exc:  # pypdf's own errors, and whatever a malformed file makes it raise
        sending.send(("CorruptFile", None, f"{type(exc).__name__}: {exc}"[:200]))
    finally:
        sending.close()


def parse_pdf(path: Path, data: bytes, max_pages: int) -> ParsedDocument:
    """The PDF's text as blocks, unbounded in time (`load_pdf` bounds it); more than `max_pages`
    pages is refused before any text is read."""
    if b"%PDF-" not in data[:1024]:
        raise CorruptFile(path, "no PDF header")
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise CorruptFile(path, "encrypted with a password")
    pages = len(reader.pages)
    if pages > max_pages:
        raise UnsupportedFile(path, f"a PDF of {pages:,} pages: Candor reads at most {max_pages:,}")
    info: Mapping[str, Any] = reader.metadata or {}
    metadata = {str(key).lstrip("/").lower(): str(info[key]) for key in info}
    blocks: list[Block] = []
    for page in reader.pages:
        page_blocks = plain_blocks((page.extract_text() or "").splitlines(), wrapped=True)
        if blocks and page_blocks and _continues(blocks[-1], page_blocks[0]):
            joined = join_lines([blocks[-1].text, page_blocks.pop(0).text])
            blocks[-1] = Block("paragraph", joined)
        blocks.extend(page_blocks)
    title = clean(str(metadata.get("title", "")))
    return ParsedDocument(blocks, title or None, metadata)


def _continues(last: Block, first: Block) -> bool:
    """A paragraph cut by a page break: no final punctuation before, lower case after."""
    both = last.kind == first.kind == "paragraph"
    return both and not last.text.endswith((".", "!", "?", ":")) and first.text[:1].islower()


def _context() -> ForkServerContext | SpawnContext:
    """A fork server where there is one (Linux, macOS), each reader starting with pypdf already
    imported; never a plain fork of this process, whose threads (the event loop's, the embedder's)
    can leave a forked child holding a lock for ever."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # no effect once the server runs: it has it already
    return context
