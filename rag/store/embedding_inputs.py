"""What exactly gets embedded for a chunk or a sentence, and the hash that identifies that input.

The hash includes the embedder's name, so a stored vector is reused only for the same input
under the same model (ingest and `--reembed` both go through here).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def chunk_input(title: str, heading_path: Sequence[str], text: str) -> str:
    """Title and heading path in front of the text: the context a chunk loses when cut out."""
    context = [title] + [heading for heading in heading_path if heading != title]
    return " > ".join(part for part in context if part) + "\n" + text


def input_hash(embedder_name: str, embedding_input: str) -> str:
    return hashlib.sha256(f"{embedder_name}\x00{embedding_input}".encode()).hexdigest()
