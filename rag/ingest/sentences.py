"""Sentence splitting for chunk packing and sentence-level embeddings.

pysbd's English rules keep abbreviations ("e.g.", "Dr.", "U.S.") and decimals ("$12.50")
inside their sentence. Its segmenter stores the text being split on itself, so the shared
instance is used under a lock (ingest runs parsing in worker threads).
"""

from __future__ import annotations

import threading

import pysbd

_SEGMENTER = pysbd.Segmenter(language="en", clean=False)
_LOCK = threading.Lock()


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` in order, stripped, with empty ones dropped."""
    if not text.strip():
        return []
    with _LOCK:
        segments: list[str] = _SEGMENTER.segment(text)
    sentences = [segment.strip() for segment in segments if segment.strip()]
    if "".join("".join(sentences).split()) != "".join(text.split()):
        return [text.strip()]  # pysbd dropped or altered text: one sentence beats a lost one
    return sentences
