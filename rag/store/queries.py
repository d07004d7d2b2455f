"""The SQL of the hot paths: hybrid retrieval (full-text side, dense side) and document upserts."""

from __future__ import annotations

import functools

from psycopg import sql

DOCUMENT_COLUMNS = (
    "kb_id, source, title, url, format, content_hash, options_hash, effective_date, date_source, "
    "date_flag, declared_date, authority, declared_authority, access_groups, metadata"
)

HNSW_OPTIONS = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200)"


def hnsw_index_sql(kb_id: int) -> str:
    """The HNSW index of one knowledge base's chunk vectors (a partial index of `chunks`): each base
    has its own graph, so a search in it walks only its own chunks (migration 0012)."""
    kb = int(kb_id)
    return f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw_kb{kb} ON chunks {HNSW_OPTIONS} WHERE kb_id = {kb}"


def gin_index_sql(kb_id: int) -> str:
    """The full-text index of one knowledge base's chunks (migration 0013), for the same reason."""
    kb = int(kb_id)
    return f"CREATE INDEX IF NOT EXISTS chunks_tsv_gin_kb{kb} ON chunks USING gin (tsv) WHERE kb_id = {kb}"


def index_sql(kb_id: int) -> list[tuple[str, str]]:
    """Each index a knowledge base has of its own: (name, the statement creating it)."""
    kb = int(kb_id)
    return [(f"chunks_embedding_hnsw_kb{kb}", hnsw_index_sql(kb)), (f"chunks_tsv_gin_kb{kb}", gin_index_sql(kb))]


HNSW_INDEXES = "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE 'chunks_embedding_hnsw%'"
"""The chunk-vector indexes (migration 0009 chose their graph's parameters: see there why)."""

# The two search statements run with cached (generic) plans: planning them each time cost ~1.4 ms of
# a search's ~5 ms in Postgres. So everything that steers the plan is written into the statement
# text, not passed as a parameter (`search_statements`): `{scope}` is `(kb_id = 1 OR kb_id = 2)`
# (the planner must see the knowledge bases to use their own indexes), `{groups}` the reader's
# access groups (a parameter's share of rows is guessed at 1%, which makes an exact scan of a
# mostly restricted base look cheap), and the row limits are numbers (a parameter LIMIT is planned
# as 10% of the table: 50 ms instead of 4 at 100k chunks).
LEXICAL_SQL = """
WITH total AS (SELECT coalesce(sum(chunks), 0) AS n FROM kb_chunk_counts WHERE {scope}),
terms AS (
    -- each word's number of chunks in the searched bases (kb_terms, migration 0019; 0: in none)
    -- and its share of them
    SELECT t.lexeme, coalesce(sum(k.chunks), 0) AS hits,
           coalesce(sum(k.chunks), 0)::float8 / greatest((SELECT n FROM total), 1) AS freq
    FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS t(lexeme)
    LEFT JOIN kb_terms k ON k.lexeme = t.lexeme AND {scope}
    GROUP BY t.lexeme
),
informative AS (
    -- the words some chunk in scope holds, but those in more than max_df of them (unless all are)
    SELECT lexeme, freq, hits FROM terms
    WHERE hits > 0 AND (freq <= %(max_df)s OR NOT EXISTS (SELECT 1 FROM terms WHERE hits > 0 AND freq <= %(max_df)s))
),
rarest AS (
    -- the two rarest of them that a chunk the reader may search holds: a word only restricted
    -- chunks hold must not take a place. Rarest first, the index asked only until two are found
    -- (OFFSET 0 keeps the order ahead of the check)
    SELECT lexeme, hits FROM (SELECT lexeme, hits FROM informative ORDER BY hits, lexeme OFFSET 0) o
    WHERE EXISTS (
        SELECT 1 FROM chunks
        WHERE tsv @@ to_tsquery('simple', quote_literal(o.lexeme))
          AND {scope}
          AND (access_groups = '{{}}' OR access_groups && {groups}::text[])
    )
    LIMIT 2
),
q AS (
    -- ranked by the informative words and those no chunk holds (which match nothing, but count in
    -- ts_rank's average over the query's words)
    SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS tsq,
           (SELECT to_tsquery('simple', string_agg(
                quote_literal(lexeme), CASE WHEN (SELECT sum(hits) FROM rarest) > %(budget)s THEN ' & ' ELSE ' | ' END))
            FROM rarest) AS gate
    FROM (SELECT lexeme FROM informative UNION ALL SELECT lexeme FROM terms WHERE hits = 0) ranked
),
lex AS (
    SELECT id, ts_rank(tsv, (SELECT tsq FROM q), 32) AS rank
    FROM (
        SELECT id, tsv FROM chunks
        WHERE tsv @@ (SELECT gate FROM q)
          AND {scope}
          AND (access_groups = '{{}}' OR access_groups && {groups}::text[])
        LIMIT {scan_cap}
    ) matched
    ORDER BY rank DESC, id
    LIMIT {n}
)
SELECT (SELECT tsq::text FROM q), coalesce((SELECT array_agg(id ORDER BY rank DESC, id) FROM lex), '{{}}')
"""

DENSE_ONE_BASE = """(
        SELECT id, embedding <=> %(vec)s AS distance FROM chunks
        WHERE kb_id = {kb}
          AND (access_groups = '{{}}' OR access_groups && {groups}::text[])
        ORDER BY embedding <=> %(vec)s
        LIMIT {n}
    )"""
"""The nearest chunks of one knowledge base, through its own HNSW index (`hnsw_index_sql`)."""

DENSE_NONE = "(SELECT NULL::bigint AS id, NULL::float8 AS distance WHERE false)"

DENSE_SQL = """
WITH dense AS (
    SELECT c.id, c.distance, row_number() OVER (ORDER BY c.distance) AS rnk
    FROM (
        SELECT id, distance FROM ({bases}) per_base
        ORDER BY distance
        LIMIT {n}
    ) c
),
lex AS (SELECT id, rnk FROM unnest(%(lex_ids)s::bigint[]) WITH ORDINALITY AS u(id, rnk)),
ids AS (SELECT id FROM dense UNION SELECT id FROM lex)
SELECT c.id, c.document_id, d.source, d.title, d.url, c.heading, c.text, d.effective_date,
       d.authority, c.access_groups, kb.name,
       1 - coalesce(dense.distance, c.embedding <=> %(vec)s) AS cosine,
       coalesce(ts_rank(c.tsv, %(tsq)s::tsquery, 32), 0) AS lexical,
       dense.rnk, lex.rnk,
       CASE WHEN d.format = 'curated' THEN d.metadata->>'answered_by' END,
       d.date_source
FROM ids
JOIN chunks c ON c.id = ids.id
JOIN documents d ON d.id = c.document_id
JOIN knowledge_bases kb ON kb.id = c.kb_id
LEFT JOIN dense ON dense.id = c.id
LEFT JOIN lex ON lex.id = c.id
"""


@functools.lru_cache(maxsize=256)
def search_statements(
    kb_ids: tuple[int, ...] | None, groups: tuple[str, ...], limit: int, scan_cap: int, every_base: tuple[int, ...]
) -> tuple[str, str]:
    """The full-text and dense statements for these knowledge bases (None: all, which are
    `every_base`), access groups (sorted, so that one set is one cached statement) and row limits.
    The dense side asks each knowledge base's own index for its nearest chunks and keeps the
    nearest of those. The groups are quoted by psycopg, and a `%` in them doubled for its
    placeholders."""
    searched = sorted({int(kb) for kb in (every_base if kb_ids is None else kb_ids)})
    # one equality per base, OR'ed: each arm is what a base's partial index covers, so the full-text
    # side reads those indexes (a bitmap OR), not one over every chunk
    scope = "(" + " OR ".join(f"kb_id = {kb}" for kb in searched) + ")" if searched else "FALSE"
    quoted = sql.Literal(list(groups)).as_string().replace("%", "%%")
    values = {"scope": scope, "groups": quoted, "n": int(limit), "scan_cap": int(scan_cap)}
    bases = " UNION ALL ".join(DENSE_ONE_BASE.format(kb=kb, **values) for kb in searched)
    return LEXICAL_SQL.format(**values), DENSE_SQL.format(bases=bases or DENSE_NONE, **values)
