"""Execution graphs as SVG: with Graphviz `dot` when it is installed, otherwise (or when asked)
a built-in layout in pure Python, so a report always has pictures.

The built-in layout follows herd's pictures: one column per thread (initial writes in a column of
their own on the left), events as boxes top to bottom in program order, po as straight arrows down
the column, every other relation as a curved arrow labelled with its name in its herd colour
(witness.EDGE_STYLE); the edges of a violated axiom's cycle are drawn thick. The output is
deterministic (fixed rounding, no ids), so several pictures can be inlined in one page.
"""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from xml.sax.saxutils import escape

from ..results.witness import EDGE_STYLE, Graph, graph_dot

FONT = "DejaVu Sans Mono,Menlo,Consolas,monospace"
CHAR_W = 6.7          # width of one character at 11px in the monospace font (a generous estimate)
BOX_H = 36
ROW = 66
GAP = 110
TOP = 52
MARGIN = 16
LAYOUTS = ("auto", "builtin", "graphviz")


@functools.lru_cache(maxsize=1)
def graphviz() -> str | None:
    """The path of Graphviz `dot`, or None."""
    return shutil.which("dot")


def render(g: Graph, layout: str = "auto") -> str:
    """One graph as an `<svg>` element (no XML prolog), for inlining in HTML."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    if layout != "builtin" and graphviz():
        out = _graphviz_svg(g)
        if out is not None:
            return out
    if layout == "graphviz" and not graphviz():
        raise RuntimeError("Graphviz 'dot' is not installed (use --layout builtin or auto)")
    return builtin(g)


def _graphviz_svg(g: Graph) -> str | None:
    try:
        p = subprocess.run([graphviz(), "-Tsvg"], input=graph_dot(g), capture_output=True, text=True,
                           timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0 or "<svg" not in p.stdout:
        return None
    svg = p.stdout[p.stdout.index("<svg"):]
    svg = re.sub(r"<!--.*?-->\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s(id|class)="[^"]*"', "", svg)
    return svg.strip() + "\n"


def _f(x: float) -> str:
    return str(int(round(x)))


def _bezier(p0, p1, p2, p3, t):
    u = 1 - t
    return tuple(u ** 3 * a + 3 * u * u * t * b + 3 * u * t * t * c + t ** 3 * d
                 for a, b, c, d in zip(p0, p1, p2, p3))


def _spline(points):
    """Cubic Bézier segments (start, control, control, end) through `points` (Catmull-Rom), with
    horizontal tangents at both ends."""
    pts = list(points)
    first = (2 * pts[0][0] - pts[1][0], pts[0][1])
    last = (2 * pts[-1][0] - pts[-2][0], pts[-1][1])
    ext = [first] + pts + [last]
    segs = []
    for i in range(1, len(ext) - 2):
        a, b, c, d = ext[i - 1], ext[i], ext[i + 1], ext[i + 2]
        c1 = (b[0] + (c[0] - a[0]) / 6, b[1] + (c[1] - a[1]) / 6)
        c2 = (c[0] - (d[0] - b[0]) / 6, c[1] - (d[1] - b[1]) / 6)
        segs.append((b, c1, c2, c))
    return segs


def _place(curve, w: float, placed: list) -> tuple[float, float]:
    """A spot on the curve for a label `w` wide that overlaps no box and no earlier label."""
    best = None
    for t in (0.5, 0.38, 0.62, 0.27, 0.73, 0.18, 0.82):
        x, y = _bezier(*curve, t)
        box = (x - w / 2 - 1, y - 12, x + w / 2 + 1, y + 1)
        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            best = (x, y - 3, box)
            break
    if best is None:
        x, y = _bezier(*curve, 0.5)
        best = (x, y - 3, (x - w / 2, y - 12, x + w / 2, y + 1))
    placed.append(best[2])
    return best[0], best[1]


def _cls(rel: str) -> str:
    return rel if rel in EDGE_STYLE else "x"


def _colors() -> dict[str, str]:
    return {**EDGE_STYLE, "x": "#333"}


def _markers() -> str:
    return "<defs>" + "".join(
        f'<marker id="ptxmc-{k}-{rel}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{w}" '
        f'markerHeight="{w}" markerUnits="userSpaceOnUse" orient="auto">'
        f'<polygon points="0,1 10,5 0,9" fill="{color}"/></marker>'
        for k, w in (("a", 9), ("h", 13)) for rel, color in _colors().items()) + "</defs>"


def defs() -> str:
    """The arrowheads, once per page (an HTML page puts this tiny SVG first in its body; every
    picture's edges refer to it through the style sheet)."""
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0" class="ptxmc-defs" '
            f'style="position:absolute" aria-hidden="true">{_markers()}</svg>\n')


def css(scope: str = "svg.execution") -> str:
    """The pictures' style sheet (the HTML page has it once; a standalone SVG carries its own)."""
    rules = [f"{scope}{{font-family:{FONT};font-size:11px}}", f"{scope} text{{stroke:none}}",
             f"{scope} .n{{fill:#fff;stroke:#444}}", f"{scope} .n.F{{fill:#eef7ee}}",
             f"{scope} .n.B{{fill:#eee}}", f"{scope} .n.I{{fill:#f6f6f6}}",
             f"{scope} .h{{font-weight:bold;font-size:12px;text-anchor:middle}}",
             f"{scope} .p{{fill:#555;text-anchor:middle}}", f"{scope} .d{{fill:#555}}",
             f"{scope} .a{{fill:#555;font-size:10px}}", f"{scope} .a.px{{fill:#7a1fa2}}",
             f"{scope} path{{fill:none;stroke-width:1.3}}", f"{scope} path.hl{{stroke-width:3}}",
             f"{scope} .lb{{font-size:10px;stroke:#fff;stroke-width:3px;paint-order:stroke;text-anchor:middle}}",
             f"{scope} .lb.po{{text-anchor:end}}", f"{scope} .lb.hl{{font-weight:bold}}"]
    for rel, color in _colors().items():
        rules.append(f"{scope} .e-{rel}{{stroke:{color};marker-end:url(#ptxmc-a-{rel})}}")
        rules.append(f"{scope} .e-{rel}.hl{{marker-end:url(#ptxmc-h-{rel})}}")
        rules.append(f"{scope} .t-{rel}{{fill:{color}}}")
    return "\n".join(rules) + "\n"


def builtin(g: Graph, standalone: bool = False) -> str:
    """The built-in layout: thread columns, boxes, curved labelled edges. Styled by classes (see
    `css`); `standalone` embeds the style sheet so the SVG also stands on its own."""
    nodes = {n.eid: n for n in g.nodes}

    def line2(n) -> str:
        parts = [n.access]
        if n.scope:
            parts.append("." + n.scope)
        if n.proxy:
            parts.append(n.proxy)
        return " · ".join(parts)

    def line1(n) -> str:
        return f"e{n.eid}: {n.label}"

    # columns and boxes
    xs, widths, pos = [], [], {}
    x = MARGIN
    for c in g.columns:
        texts = [line1(nodes[e]) for e in c.events] + [line2(nodes[e]) for e in c.events]
        texts += [c.name, c.position]
        w = max(120.0, max(len(t) for t in texts) * CHAR_W + 16)
        xs.append(x)
        widths.append(w)
        for row, e in enumerate(c.events):
            pos[e] = (x, TOP + row * ROW, w)
        x += w + GAP
    width = x - GAP + MARGIN + 40
    rows = max((len(c.events) for c in g.columns), default=0)
    height = TOP + max(rows, 1) * ROW + 10
    col_of = {e: i for i, c in enumerate(g.columns) for e in c.events}

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" height="{_f(height)}" '
           f'viewBox="0 0 {_f(width)} {_f(height)}" class="execution">']
    if standalone:
        out.append(f"<title>{escape(g.title or 'execution')}</title>")
        out.append(f"<style>{css('.execution')}</style>")
        out.append(_markers())
    for i, c in enumerate(g.columns):
        cx = xs[i] + widths[i] / 2
        out.append(f'<text x="{_f(cx)}" y="18" class="h">{escape(c.name)}</text>')
        if c.position:
            out.append(f'<text x="{_f(cx)}" y="33" class="p">{escape(c.position)}</text>')
    for e, (bx, by, w) in sorted(pos.items()):
        n = nodes[e]
        kind = ("F" if n.kind == "F" else "B" if n.kind == "B" else "M") if n.thread else "I"
        rx = 16 if kind in ("F", "B") else 5
        out.append(f'<rect class="n {kind}" x="{_f(bx)}" y="{_f(by)}" width="{_f(w)}" height="{BOX_H}" rx="{rx}"/>')
        out.append(f'<text x="{_f(bx + 8)}" y="{_f(by + 15)}">{escape(line1(n))}</text>')
        px = " px" if n.proxy and n.proxy != "generic" else ""
        out.append(f'<text x="{_f(bx + 8)}" y="{_f(by + 29)}" class="a{px}">{escape(line2(n))}</text>')

    # edges, then their labels on top
    seen: dict[tuple[int, int], int] = {}
    labels = []
    for ed in g.edges:
        if ed.src not in pos or ed.dst not in pos:
            continue
        cls = f"e-{_cls(ed.rel)}" + (" hl" if ed.highlight else "")
        key = (min(ed.src, ed.dst), max(ed.src, ed.dst))
        k = seen.get(key, 0)
        seen[key] = k + 1
        (sx, sy, swd), (tx, ty, twd) = pos[ed.src], pos[ed.dst]
        cs, ct = col_of[ed.src], col_of[ed.dst]
        if ed.rel == "po" and cs == ct and ty > sy and k == 0:
            p0 = (sx + swd / 2, sy + BOX_H)
            p3 = (tx + twd / 2, ty)
            out.append(f'<path class="{cls}" d="M{_f(p0[0])},{_f(p0[1])}V{_f(p3[1] - 1)}"/>')
            labels.append(((p0[0] - 6, (p0[1] + p3[1]) / 2 + 4), ed.rel, ed.highlight))
            continue
        if cs == ct:
            bulge = 34 + 8 * abs(ty - sy) / ROW + 16 * k
            p0 = (sx + swd, sy + BOX_H / 2 - 6)
            p3 = (tx + twd, ty + BOX_H / 2 + 6 if ty >= sy else ty + BOX_H / 2 - 6)
            p1 = (p0[0] + bulge, p0[1])
            p2 = (p3[0] + bulge, p3[1])
        else:
            right = ct > cs
            off = (k + 1) // 2 * 9 * (1 if k % 2 else -1)     # parallel edges: spread the ends
            p0 = (sx + swd if right else sx, sy + BOX_H / 2 + off)
            p3 = (tx if right else tx + twd, ty + BOX_H / 2 + off)
            if abs(ct - cs) > 1:
                # Through the gaps between the rows of the columns in between, not across boxes.
                way = [p0]
                step = 1 if right else -1
                for i in range(cs + step, ct, step):
                    frac = (xs[i] + widths[i] / 2 - p0[0]) / ((p3[0] - p0[0]) or 1)
                    y = p0[1] + frac * (p3[1] - p0[1])
                    gy = min((TOP - 16 + r * ROW for r in range(rows + 1)), key=lambda g: (abs(g - y), g))
                    gy += off / 3
                    a, b = xs[i] - 10, xs[i] + widths[i] + 10
                    way += [(a, gy), (b, gy)] if right else [(b, gy), (a, gy)]
                way.append(p3)
                segs = _spline(way)
                d = f"M{_f(p0[0])},{_f(p0[1])}" + "".join(
                    "C" + " ".join(f"{_f(a)},{_f(b)}" for a, b in (c1, c2, e)) for _, c1, c2, e in segs)
                out.append(f'<path class="{cls}" d="{d}"/>')
                labels.append((segs[0], ed.rel, ed.highlight))
                continue
            dx = (p3[0] - p0[0]) / 3
            p1 = (p0[0] + dx, p0[1])
            p2 = (p3[0] - dx, p3[1])
        pts = " ".join(f"{_f(a)},{_f(b)}" for a, b in (p1, p2, p3 if cs == ct else (p3[0] - (1 if ct > cs else -1), p3[1])))
        out.append(f'<path class="{cls}" d="M{_f(p0[0])},{_f(p0[1])}C{pts}"/>')
        labels.append(((p0, p1, p2, p3), ed.rel, ed.highlight))
    placed: list[tuple[float, float, float, float]] = [
        (bx, by, bx + w, by + BOX_H) for bx, by, w in pos.values()]
    for where, text, hl in labels:
        rel = _cls(text)
        text = text if len(text) <= 28 else text[:27] + "…"
        if len(where) == 4:
            lx, ly = _place(where, len(text) * 6.1, placed)
            extra = ""
        else:
            lx, ly = where
            extra = " po"
        out.append(f'<text x="{_f(lx)}" y="{_f(ly)}" class="lb t-{rel}{extra}{" hl" if hl else ""}">'
                   f"{escape(text)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def legend() -> str:
    """A small picture of the edge conventions (built-in, styled like the pictures)."""
    items = [("po", "program order"), ("rf", "reads-from"), ("co", "coherence"), ("fr", "from-read"),
             ("sw", "synchronizes-with"), ("cause", "causality order (cross-thread)")]
    h = 22 * len(items) + 36
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="340" height="{h}" viewBox="0 0 340 {h}" '
           'class="execution legend">']
    for i, (rel, what) in enumerate(items + [("x", "edges of a violated axiom's cycle")]):
        y = 14 + 22 * i
        hl = " hl" if rel == "x" else ""
        out.append(f'<path class="e-{rel}{hl}" d="M10,{y}C30,{y - 6} 50,{y - 6} 72,{y}"/>')
        out.append(f'<text x="84" y="{y + 4}" class="t-{rel}">{"cycle" if hl else rel}</text>')
        out.append(f'<text x="134" y="{y + 4}" class="d">{escape(what)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
