"""Sentence splitting for chunk packing and sentence-level embeddings.

pysbd's English rules keep abbreviations ("e.g.", "Dr.", "U.S.") and decimals ("$12.50")
inside their sentence. `Segmenter.segment` maps every sentence back onto the original text
with one freshly compiled regex per sentence, which is half its run time and keeps state on
the shared segmenter; the sentences are stripped here anyway, so its processor is called
directly (a new one per call, so threads can share the module-level segmenter).
"""

from __future__ import annotations

import pysbd

_SEGMENTER = pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` in order, stripped, with empty ones dropped."""
    if not text.strip():
        return []
    segments: list[str] = _SEGMENTER.processor(text).process()
    sentences = [segment.strip() for segment in segments if segment.strip()]
    if "".join("".join(sentences).split()) != "".join(text.split()):
        return [text.strip()]  # pysbd dropped or altered text: one sentence beats a lost one
    return sentences
