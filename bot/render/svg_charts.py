"""Charts as inline SVG strings, for pages that must make no request of their own (`bot.render.report_html`).

Pure functions of the numbers: `line_chart`, `stacked_bars` and `bar_chart` each return one ``<svg>``
to inline in HTML (which needs no namespace) with ``role="img"`` and a ``<title>`` (its accessible
name), axis labels, a legend, and a value at each point: visible when there is room, and always as
the tooltip (``<title>``) of its mark, so a screen reader or a hover can read it. A None value is a
gap, never a zero; a chart with no value at all says "no data". Every text is escaped here, whatever
the caller passes.

Drawn by hand rather than with matplotlib: a few hundred lines give small, deterministic markup whose
accessibility attributes we control, without a 40 MB dependency. Colours are the Okabe-Ito palette
(distinguishable with the common colour-vision deficiencies) and each line also has its own dash
pattern and marker shape, so no series is told apart by colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
DASHES = ("", "7 4", "2 3", "9 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond")
WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 44, 52
FONT = "font-family:system-ui,sans-serif"
NO_DATA = "no data"


@dataclass(frozen=True, slots=True)
class Series:
    """One named sequence of values, one per category; None where there is no value."""

    name: str
    values: Sequence[float | None]
    labels: Sequence[str] | None = None
    """The text shown for each value (e.g. "7/8 (88%)"); the formatted value when not given."""
    low: Sequence[float | None] | None = None
    high: Sequence[float | None] | None = None
    """An interval around each value (drawn as a whisker), where known."""

    def label(self, i: int, percent: bool) -> str:
        if self.labels is not None and i < len(self.labels):
            return self.labels[i]
        return format_value(self.values[i], percent)


def format_value(value: float | None, percent: bool = False) -> str:
    """A short number for a tick or a point: `25%`, `1,204`, `0.0031`, `-` for no value."""
    if value is None:
        return "-"
    if percent:
        return f"{100 * value:.1f}%" if 0 < abs(value) < 0.1 else f"{100 * value:.0f}%"
    if value == 0 or (value == int(value) and abs(value) >= 1):
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def nice_top(value: float) -> float:
    """The smallest 1, 2, 4, 6 or 8 × 10^k at or above `value` (1 for nothing to show): quarters of it
    are round numbers, so the four grid lines read 25, 50, 75 or 1, 2, 3 and never 37.5."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(step * power for step in (1, 2, 4, 6, 8, 10) if step * power >= value * (1 - 1e-9)))


@dataclass(frozen=True, slots=True)
class _Plot:
    """Where a category and a value fall in the drawing area."""

    count: int
    top: float

    @property
    def step(self) -> float:
        return (WIDTH - LEFT - RIGHT) / max(self.count, 1)

    def x(self, i: int) -> float:
        return LEFT + self.step * (i + 0.5)

    def y(self, value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - min(max(value / self.top, 0.0), 1.0))


def _text(x: float, y: float, text: str, *, size: int = 11, anchor: str = "middle", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" style="{FONT}"{extra}>'
        f"{escape(text)}</text>"
    )


def _frame(title: str, body: Sequence[str]) -> str:
    return (
        f'<svg role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" class="chart"><title>{escape(title)}</title>'
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>{"".join(body)}</svg>'
    )


def _no_data(title: str) -> str:
    return _frame(title, [_text(WIDTH / 2, HEIGHT / 2, NO_DATA, size=16, extra=' fill="#555555" class="no-data"')])


def _axes(plot: _Plot, categories: Sequence[str], percent: bool, y_label: str) -> list[str]:
    """Grid lines with their values, the category labels (thinned when they would overlap), the y label."""
    parts = []
    for k in range(5):
        value = plot.top * k / 4
        y = plot.y(value)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dddddd"/>')
        parts.append(_text(LEFT - 6, y + 4, format_value(value, percent), size=10, anchor="end"))
    base = HEIGHT - BOTTOM
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}" stroke="#333333"/>')
    widest = max((len(c) for c in categories), default=1) * 6.5
    every = max(1, math.ceil(widest / plot.step))
    for i, category in enumerate(categories):
        if i % every == 0:
            parts.append(_text(plot.x(i), base + 16, category, size=10))
    if y_label:
        mid = (TOP + base) / 2
        parts.append(_text(14, mid, y_label, size=10, extra=f' transform="rotate(-90 14 {mid:.1f})"'))
    return parts


def _legend(series: Sequence[Series], line: bool) -> list[str]:
    parts, x = [], float(LEFT)
    for n, one in enumerate(series):
        colour = COLOURS[n % len(COLOURS)]
        if line:
            dash = DASHES[n % len(DASHES)]
            parts.append(
                f'<line x1="{x:.1f}" x2="{x + 22:.1f}" y1="16" y2="16" stroke="{colour}" stroke-width="2.5"'
                + (f' stroke-dasharray="{dash}"' if dash else "")
                + "/>"
            )
            parts.append(_marker(n, x + 11, 16))
        else:
            parts.append(f'<rect x="{x:.1f}" y="10" width="14" height="12" fill="{colour}"/>')
        parts.append(_text(x + 28, 20, one.name, anchor="start"))
        x += 40 + 6.5 * len(one.name)
    return parts


def _marker(n: int, x: float, y: float, tooltip: str = "") -> str:
    colour, shape = COLOURS[n % len(COLOURS)], MARKERS[n % len(MARKERS)]
    tip = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}">{tip}</circle>'
    if shape == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}">{tip}</rect>'
    points = (
        [(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)]
        if shape == "triangle"
        else [(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)]
    )
    drawn = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    return f'<polygon points="{drawn}" fill="{colour}">{tip}</polygon>'


def _has_values(series: Sequence[Series]) -> bool:
    return any(v is not None for one in series for v in one.values)


def _highest(series: Sequence[Series]) -> float:
    values = [v for one in series for v in (*one.values, *(one.high or ())) if v is not None]
    return max(values, default=0.0)


def _fits(plot: _Plot, series: Sequence[Series], percent: bool, share: int = 1) -> bool:
    """Whether every visible value label fits in its slot (else the tooltips and the table carry them)."""
    longest = max((len(s.label(i, percent)) for s in series for i in range(len(s.values))), default=0)
    return longest * 6 <= plot.step / share


def line_chart(
    title: str, categories: Sequence[str], series: Sequence[Series], *, percent: bool = False, y_label: str = ""
) -> str:
    """A line per series over the categories (periods, runs); gaps where a value is None; whiskers for
    intervals. `percent`: values are shares (0..1) and the axis reads in %."""
    if not categories or not _has_values(series):
        return _no_data(title)
    plot = _Plot(len(categories), nice_top(_highest(series)) if not percent else min(1.0, nice_top(_highest(series))))
    show = _fits(plot, series, percent)
    body = [*_axes(plot, categories, percent, y_label), *_legend(series, line=True)]
    # Series with intervals are nudged apart, so whiskers at the same category do not hide each other.
    dodge = 8.0 if any(one.low is not None for one in series) else 0.0
    for n, one in enumerate(series):
        colour, dash = COLOURS[n % len(COLOURS)], DASHES[n % len(DASHES)]
        shift = (n - (len(series) - 1) / 2) * dodge

        def x(i: int, shift: float = shift) -> float:
            return plot.x(i) + shift

        for run in _runs(one.values):
            if len(run) > 1:
                points = " ".join(f"{x(i):.1f},{plot.y(v):.1f}" for i, v in run)
                style = f' stroke-dasharray="{dash}"' if dash else ""
                body.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2.5"{style}/>')
        for i, value in enumerate(one.values):
            if value is None:
                continue
            low, high = _at(one.low, i), _at(one.high, i)
            interval = ""
            if low is not None and high is not None:
                body.append(_whisker(x(i), plot.y(low), plot.y(high), colour))
                interval = f" (interval {format_value(low, percent)} to {format_value(high, percent)})"
            text = one.label(i, percent)
            body.append(_marker(n, x(i), plot.y(value), f"{one.name}, {categories[i]}: {text}{interval}"))
            if show:
                body.append(_text(x(i), plot.y(value) - 8 - 11 * (n % 2), text, size=9, extra=' class="value"'))
    return _frame(title, body)


def _at(values: Sequence[float | None] | None, i: int) -> float | None:
    return values[i] if values is not None and i < len(values) else None


def _runs(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Consecutive non-None stretches, with their positions: a line is broken at each gap."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            runs.append([])
        else:
            runs[-1].append((i, value))
    return [run for run in runs if run]


def _whisker(x: float, bottom: float, top: float, colour: str) -> str:
    return (
        f'<g class="interval" stroke="{colour}" stroke-width="1.5">'
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}"/>'
        f'<line x1="{x - 6:.1f}" x2="{x + 6:.1f}" y1="{top:.1f}" y2="{top:.1f}"/>'
        f'<line x1="{x - 6:.1f}" x2="{x + 6:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}"/></g>'
    )


def stacked_bars(
    title: str, categories: Sequence[str], series: Sequence[Series], *, percent: bool = True, y_label: str = ""
) -> str:
    """A bar per category, the series stacked in order (shares of a whole when `percent`); a category
    whose values are all None has no bar."""
    if not categories or not _has_values(series):
        return _no_data(title)
    heights = [sum(one.values[i] or 0.0 for one in series) for i in range(len(categories))]
    top = 1.0 if percent else nice_top(max(heights, default=0.0))
    plot = _Plot(len(categories), top)
    width = min(plot.step * 0.7, 80)
    body = [*_axes(plot, categories, percent, y_label), *_legend(series, line=False)]
    for i, category in enumerate(categories):
        base = 0.0
        for n, one in enumerate(series):
            value = one.values[i]
            if not value:
                continue
            y_top, y_bottom = plot.y(base + value), plot.y(base)
            text = one.label(i, percent)
            body.append(
                f'<rect x="{plot.x(i) - width / 2:.1f}" y="{y_top:.1f}" width="{width:.1f}" '
                f'height="{y_bottom - y_top:.1f}" fill="{COLOURS[n % len(COLOURS)]}">'
                f"<title>{escape(f'{one.name}, {category}: {text}')}</title></rect>"
            )
            if y_bottom - y_top >= 13 and len(text) * 6 <= width:
                body.append(
                    _text(plot.x(i), (y_top + y_bottom) / 2 + 4, text, size=10, extra=' fill="#ffffff" class="value"')
                )
            base += value
    return _frame(title, body)


def bar_chart(
    title: str, categories: Sequence[str], series: Sequence[Series], *, percent: bool = False, y_label: str = ""
) -> str:
    """Bars side by side per category, one per series (e.g. p50 and p95 per stage); None draws nothing."""
    if not categories or not _has_values(series):
        return _no_data(title)
    plot = _Plot(len(categories), nice_top(_highest(series)) if not percent else 1.0)
    width = min(plot.step * 0.8 / max(len(series), 1), 48)
    show = _fits(plot, series, percent, share=len(series))
    body = [*_axes(plot, categories, percent, y_label), *_legend(series, line=False)]
    for i, category in enumerate(categories):
        for n, one in enumerate(series):
            value = one.values[i]
            if value is None:
                continue
            x = plot.x(i) + (n - len(series) / 2) * width
            y = plot.y(value)
            text = one.label(i, percent)
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width - 2:.1f}" height="{HEIGHT - BOTTOM - y:.1f}" '
                f'fill="{COLOURS[n % len(COLOURS)]}"><title>{escape(f"{one.name}, {category}: {text}")}</title></rect>'
            )
            if show:
                body.append(_text(x + width / 2 - 1, y - 4, text, size=9, extra=' class="value"'))
    return _frame(title, body)
