"""Pure renderers: an `Answer`, a report, an audit or the gaps as text, HTML and SVG charts (no I/O)."""
