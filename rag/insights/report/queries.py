"""The SQL of `candor report` (`rag.insights.report.build`): one query per measure over the gate log.

Every measure query starts from the same `scoped` CTE (the traces of the window, optionally of one
knowledge base, each with its `period`: the UTC day or week it falls in, and its `utc_day`) and groups
by `GROUPING SETS ((period), ())`, so one query returns a row per period and the total row
(`is_total`); the sampled measures' queries (`DAILY`) return a row per period and day instead. With
no grouping asked (`:unit` NULL) every trace's period is NULL: one period row, which the caller
ignores, and the total.

Parameters: `since`, `until` (timestamptz, until excluded), `unit` ('day', 'week' or NULL), `kb`
(a knowledge base name or NULL).
"""

from __future__ import annotations

from sqlalchemy import TextClause, text

# A trace belongs to a knowledge base when its scope names it, or when one of its cited sources is a
# document of it. The stored scope is the one the answer was made in: the caller's (`candor ask`,
# `candor eval`) or the access policy's (chat questions, since 2026-11-30; traces before that have
# none). A scope that names no knowledge base (the policy granted all of them) leaves it to the
# sources; so an abstention with such a scope, citing nothing, belongs to no knowledge base.
SCOPED = """
WITH scoped AS (
    SELECT t.id, t.route, COALESCE(t.platform, 'unknown') AS platform, t.answer, t.timings,
           t.prompt_tokens, t.completion_tokens, t.cost,
           date_trunc(CAST(:unit AS text), t.created_at AT TIME ZONE 'UTC') AS period,
           CAST(t.created_at AT TIME ZONE 'UTC' AS date) AS utc_day
    FROM traces t
    WHERE t.created_at >= :since AND t.created_at < :until
      AND (
        CAST(:kb AS text) IS NULL
        OR (jsonb_typeof(t.scope -> 'knowledge_bases') = 'array'
            AND t.scope -> 'knowledge_bases' @> jsonb_build_array(CAST(:kb AS text)))
        OR EXISTS (
            SELECT 1 FROM trace_sources ts
            JOIN documents d ON d.id = ts.document_id
            JOIN knowledge_bases k ON k.id = d.kb_id
            WHERE ts.trace_id = t.id AND k.name = CAST(:kb AS text)
        )
      )
)
"""


def _measure(sql: str) -> TextClause:
    return text(SCOPED + sql)


ROUTES = _measure(
    """
    SELECT GROUPING(period) = 1 AS is_total, period,
           count(*) AS questions,
           count(*) FILTER (WHERE route = 'answered') AS answered,
           count(*) FILTER (WHERE route = 'low_confidence') AS low_confidence,
           count(*) FILTER (WHERE route = 'abstained') AS abstained,
           count(*) FILTER (WHERE route <> 'abstained' AND COALESCE(jsonb_array_length(
               CASE WHEN jsonb_typeof(answer -> 'conflicts') = 'array' THEN answer -> 'conflicts' END), 0) > 0
           ) AS conflicted
    FROM scoped GROUP BY GROUPING SETS ((period), ())
    """
)

# First pass: the `faithfulness` gate of the first attempt of the writer that wrote last: attempt 1,
# or the model's first when it wrote after the extractive writer's attempts (CANDOR_EXTRACTIVE_FIRST;
# its first `writer` gate). Drafted sentences: what the faithfulness gate of
# each attempt checked (its `sentences` detail); dropped: the critic's drops of every attempt
# (`stage = 'critic'`; the focus check's withheld sentences were supported and do not count).
GATES = _measure(
    """
    SELECT GROUPING(s.period) = 1 AS is_total, s.period,
           count(f.first) AS judged,
           count(*) FILTER (WHERE NOT f.first) AS rejected,
           count(*) FILTER (WHERE NOT f.first AND f.second IS NOT NULL) AS retried,
           count(*) FILTER (WHERE NOT f.first AND f.second) AS resolved,
           COALESCE(sum(f.drafted), 0) AS drafted,
           COALESCE(sum(d.dropped), 0) AS dropped
    FROM scoped s
    CROSS JOIN LATERAL (
        SELECT COALESCE(min(w.attempt), 1) AS n FROM gate_outcomes w WHERE w.trace_id = s.id AND w.gate = 'writer'
    ) w
    CROSS JOIN LATERAL (
        SELECT bool_and(g.passed) FILTER (WHERE g.attempt = w.n) AS first,
               bool_and(g.passed) FILTER (WHERE g.attempt = w.n + 1) AS second,
               sum(CASE WHEN jsonb_typeof(g.details -> 'sentences') = 'number'
                        THEN CAST(g.details ->> 'sentences' AS numeric) END) AS drafted
        FROM gate_outcomes g WHERE g.trace_id = s.id AND g.gate = 'faithfulness'
    ) f
    CROSS JOIN LATERAL (
        SELECT count(*) AS dropped FROM dropped_sentences x WHERE x.trace_id = s.id AND x.stage = 'critic'
    ) d
    GROUP BY GROUPING SETS ((s.period), ())
    """
)

# Votes are counted with the answer they are on: in the answer's period, under its route.
FEEDBACK = _measure(
    """
    SELECT GROUPING(s.period) = 1 AS is_total, s.period, s.route,
           count(DISTINCT s.id) AS rated, count(*) AS votes,
           count(*) FILTER (WHERE f.rating = 1) AS up,
           count(*) FILTER (WHERE f.rating = -1) AS down
    FROM scoped s JOIN feedback f ON f.trace_id = s.id
    GROUP BY GROUPING SETS ((s.period, s.route), (s.route))
    """
)

# percentile_cont interpolates linearly between the two nearest values.
LATENCY = _measure(
    """
    SELECT GROUPING(s.period) = 1 AS is_total, s.period, t.stage, count(t.ms) AS n,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY t.ms) AS p95
    FROM scoped s
    CROSS JOIN LATERAL (
        SELECT e.key AS stage,
               CASE WHEN jsonb_typeof(e.value) = 'number' THEN CAST(e.value::text AS double precision) END AS ms
        FROM jsonb_each(CASE WHEN jsonb_typeof(s.timings) = 'object' THEN s.timings ELSE '{}'::jsonb END) e
    ) t
    GROUP BY GROUPING SETS ((s.period, t.stage), (t.stage))
    """
)

# Totals on the trace (migration 0007): NULL tokens mean not recorded (a trace from before), a NULL
# cost with recorded tokens means a call to an unpriced model.
USAGE = _measure(
    """
    SELECT GROUPING(s.period) = 1 AS is_total, s.period,
           count(*) AS answers,
           count(*) FILTER (WHERE s.prompt_tokens IS NULL) AS not_recorded,
           COALESCE(sum(s.prompt_tokens), 0) AS prompt_tokens,
           COALESCE(sum(s.completion_tokens), 0) AS completion_tokens,
           count(*) FILTER (WHERE s.prompt_tokens IS NOT NULL AND s.cost IS NULL) AS unpriced_answers,
           COALESCE(sum(s.cost), 0) AS priced_cost,
           COALESCE(sum(c.calls), 0) AS model_calls,
           COALESCE(sum(c.unpriced), 0) AS unpriced_calls
    FROM scoped s
    CROSS JOIN LATERAL (
        SELECT count(*) AS calls, count(*) FILTER (WHERE m.cost IS NULL) AS unpriced
        FROM model_calls m WHERE m.trace_id = s.id
    ) c
    GROUP BY GROUPING SETS ((s.period), ())
    """
)

# Cited documents by the path they were ingested from and their knowledge base (NULL once deleted).
DOCUMENTS = _measure(
    """
    SELECT GROUPING(s.period) = 1 AS is_total, s.period, ts.document, k.name AS knowledge_base,
           max(ts.title) AS title, count(DISTINCT ts.trace_id) AS answers
    FROM scoped s
    JOIN trace_sources ts ON ts.trace_id = s.id
    LEFT JOIN documents d ON d.id = ts.document_id
    LEFT JOIN knowledge_bases k ON k.id = d.kb_id
    GROUP BY GROUPING SETS ((s.period, ts.document, k.name), (ts.document, k.name))
    """
)

PLATFORMS = _measure(
    """
    SELECT GROUPING(period) = 1 AS is_total, period, platform, count(*) AS n
    FROM scoped GROUP BY GROUPING SETS ((period, platform), (platform))
    """
)

# The newest runs of the window, oldest first; a run belongs to the knowledge base it was asked of.
EVAL_RUNS = text(
    """
    SELECT id, created_at, golden, knowledge_base, summary FROM (
        SELECT id, created_at, golden, knowledge_base, summary FROM eval_runs
        WHERE created_at >= :since AND created_at < :until
          AND (CAST(:kb AS text) IS NULL OR knowledge_base = CAST(:kb AS text))
        ORDER BY created_at DESC, id DESC LIMIT :limit
    ) newest ORDER BY created_at, id
    """
)

# The sampled measures are stratified by UTC day (`rag.insights.report.audit_measures.stratified`), so their queries
# return a row per (period, day) and no total row: the caller sums the days of each period and of the
# window. Delivered sentences: those of every delivered answer of the day (answered, low confidence),
# audited or not, the weights of the days.
DELIVERED = _measure(
    """
    SELECT period, utc_day,
           COALESCE(sum(CASE WHEN route IN ('answered', 'low_confidence')
                              AND jsonb_typeof(answer -> 'sentences') = 'array'
                             THEN jsonb_array_length(answer -> 'sentences') END), 0) AS delivered
    FROM scoped GROUP BY period, utc_day
    """
)

# Audits (migration 0008), by the day of the trace audited. One judgement per delivered sentence among
# the independent ones (and one among the gate's own verifier's): a judgement wins over a "not
# judged" row, then the newest run, whichever verifier made it; `verifiers` names those counted.
AUDIT_SENTENCES = _measure(
    """
    , latest AS (
        SELECT DISTINCT ON (a.trace_id, a.position, a.independent)
               s.period, s.utc_day, a.trace_id, r.verifier, a.supported, a.independent
        FROM scoped s
        JOIN audit_sentences a ON a.trace_id = s.id
        JOIN audit_runs r ON r.id = a.run_id
        WHERE r.kind = 'verifier'
        ORDER BY a.trace_id, a.position, a.independent, (a.supported IS NOT NULL) DESC,
                 r.created_at DESC, r.id DESC
    )
    SELECT period, utc_day, independent,
           count(*) FILTER (WHERE supported IS NOT NULL) AS judged,
           count(*) FILTER (WHERE NOT supported) AS unsupported,
           count(*) FILTER (WHERE supported IS NULL) AS not_judged,
           count(DISTINCT trace_id) FILTER (WHERE supported IS NOT NULL) AS answers,
           array_agg(DISTINCT verifier) FILTER (WHERE supported IS NOT NULL) AS verifiers,
           array_agg(DISTINCT verifier) AS tried
    FROM latest GROUP BY period, utc_day, independent
    """
)

# Abstentions and unanswered parts: the latest re-check of each (`part` NULL: the whole question).
AUDIT_ABSTENTIONS = _measure(
    """
    , latest AS (
        SELECT DISTINCT ON (a.trace_id, a.part) s.period, a.label
        FROM scoped s
        JOIN audit_abstentions a ON a.trace_id = s.id
        JOIN audit_runs r ON r.id = a.run_id
        ORDER BY a.trace_id, a.part, r.created_at DESC, r.id DESC
    )
    SELECT GROUPING(period) = 1 AS is_total, period, count(*) AS checked,
           count(*) FILTER (WHERE label IN ('possibly_answerable', 'wrong_abstention')) AS possibly_answerable
    FROM latest GROUP BY GROUPING SETS ((period), ())
    """
)

# People's labels: one per item (`human_labels_item`; a re-import replaced the earlier one), by day. A
# sentence labelled `partly` supported counts as unsupported (it says more than its source), and is counted too.
HUMAN_LABELS = _measure(
    """
    SELECT s.period, s.utc_day,
           count(*) FILTER (WHERE h.position IS NOT NULL) AS sentences,
           count(*) FILTER (WHERE h.label IN ('unsupported', 'partly')) AS unsupported,
           count(*) FILTER (WHERE h.label = 'partly') AS partly,
           count(DISTINCT h.trace_id) FILTER (WHERE h.position IS NOT NULL) AS labelled_answers,
           count(*) FILTER (WHERE h.position IS NULL) AS abstentions,
           count(*) FILTER (WHERE h.label = 'wrong_abstention') AS wrong
    FROM scoped s JOIN human_labels h ON h.trace_id = s.id
    GROUP BY s.period, s.utc_day
    """
)

DAILY = frozenset({"delivered", "audit_sentences", "human_labels"})
"""The measures whose rows are per (period, day), without a total row."""

MEASURES: dict[str, TextClause] = {
    "routes": ROUTES,
    "gates": GATES,
    "feedback": FEEDBACK,
    "latency": LATENCY,
    "usage": USAGE,
    "documents": DOCUMENTS,
    "platforms": PLATFORMS,
    "delivered": DELIVERED,
    "audit_sentences": AUDIT_SENTENCES,
    "audit_abstentions": AUDIT_ABSTENTIONS,
    "human_labels": HUMAN_LABELS,
}
