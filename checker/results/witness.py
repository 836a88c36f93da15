"""One execution as text and as a graph: events in thread columns, po/rf/co/fr/sw/cause edges
(herd's colours: po black, rf red, co blue, fr orange, synchronization dark green), values read
and written, scopes and proxies. `graph` builds the picture's data once; `dot` prints it for
Graphviz and checker.report.svg lays it out as SVG."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.events import EventStructure
from ..engines.base import Execution
from ..isa.mbarrier import describe as describe_mbarrier
from .result import outcome_text

EDGE_STYLE = {"po": "black", "rf": "red", "co": "blue", "fr": "#ffa040", "sw": "darkgreen",
              "cause": "#a0522d", "dep": "indigo", "rmw": "grey40"}
SCOPE_TAGS = {"CTA": "cta", "CLUSTER": "cluster", "GPU": "gpu", "SYS": "sys"}
PROXY_TAGS = {"GEN": "generic", "ASYNC": "async", "TMAP": "tensormap", "TEX": "texture",
              "SUR": "surface", "CON": "constant"}


@dataclass(frozen=True)
class Node:
    eid: int
    thread: str | None          # None: an initial write
    kind: str                   # R W F B ...
    label: str                  # the instruction text ("init x=0" for initial writes)
    access: str                 # "R x=0", "W flag=1", "F", ...
    scope: str | None           # cta cluster gpu sys (strong operations only)
    proxy: str | None           # generic async tensormap texture surface constant


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    rel: str                    # po rf co fr sw cause, or a relation named by a blamed axiom
    highlight: bool = False     # part of the cycle / edge that a violated axiom shows


@dataclass(frozen=True)
class Column:
    name: str                   # thread name, or "init"
    position: str               # "gpu0.cta1.warp0"; "" for init
    events: tuple[int, ...]     # in program order


@dataclass(frozen=True)
class Graph:
    title: str
    columns: tuple[Column, ...]
    nodes: tuple[Node, ...]     # by eid order, only the events shown
    edges: tuple[Edge, ...]     # sorted; highlighted edges last
    outcome: str

    def node(self, eid: int) -> Node:
        return next(n for n in self.nodes if n.eid == eid)


def _reduce(pairs) -> list[tuple[int, int]]:
    """Transitive reduction of a (transitive or not) relation: drop (a,c) when some (a,b),(b,c)."""
    s = set(pairs)
    succ: dict[int, set] = {}
    for a, b in s:
        succ.setdefault(a, set()).add(b)
    return sorted((a, c) for a, c in s if not any(c in succ.get(b, ()) for b in succ[a] if b != c and b != a))


def graph(es: EventStructure, ex: Execution, env: dict, title: str = "", positions=None,
          highlight=()) -> Graph:
    """The picture of one execution. `positions` maps thread names to their position text;
    `highlight` is a path of (src, relation, dst) steps (a violated axiom's cycle) drawn thick."""
    from ..model.values import evaluate

    positions = positions or {}
    rel = {"po": _reduce(es.relations["po"]), "rf": sorted(ex.rf),
           "co": _reduce(ex.orders.get("co", ()))}
    co = set(ex.orders.get("co", ()))
    fr = set(env["fr"][1]) if env.get("fr", ("", None))[0] == "rel" else set()
    rel["fr"] = sorted((r, w) for r, w in fr if not any((r, m) in fr and (m, w) in co for m in range(len(es.events))))
    if env.get("sw", ("", None))[0] == "rel":
        rel["sw"] = sorted(env["sw"][1])
    if env.get("cause", ("", None))[0] == "rel":
        th = {ev.eid: ev.thread for ev in es.events}
        rel["cause"] = [(a, b) for a, b in _reduce(env["cause"][1]) if th[a] != th[b] and (a, b) not in ex.rf]
    edges = {(a, b, name, False) for name, pairs in rel.items() for a, b in pairs}
    for a, name, b in highlight:
        edges.discard((a, b, name, False))
        edges.add((a, b, name, True))
    ordered = sorted(edges, key=lambda e: (e[3], e[2] != "po", e[2], e[0], e[1]))
    shown_init = {e for a, b, _, _ in ordered for e in (a, b) if es.events[e].thread is None}

    def value(ev) -> str:
        loc = ev.vloc or ev.loc or "?"
        if ev.kind == "R":
            return f"R {loc}={shown_value(ev, ex.read_values.get(ev.eid, '?'))}"
        if ev.kind == "W" and ev.eid in es.write_value:
            try:
                return f"W {loc}={shown_value(ev, evaluate(es.write_value[ev.eid], lambda r: ex.read_values[r]))}"
            except KeyError:
                return f"W {loc}"
        return ev.kind

    nodes, columns = [], []
    init = tuple(ev.eid for ev in es.events if ev.thread is None and ev.eid in shown_init)
    if init:
        columns.append(Column("init", "", init))
    for t in es.thread_names:
        columns.append(Column(t, str(positions.get(t, "")), tuple(ev.eid for ev in es.events if ev.thread == t)))
    shown = {e for c in columns for e in c.events}
    for ev in es.events:
        if ev.eid not in shown:
            continue
        scope = next((v for k, v in SCOPE_TAGS.items() if k in ev.tags), None)
        proxy = next((v for k, v in PROXY_TAGS.items() if k in ev.tags), None)
        nodes.append(Node(ev.eid, ev.thread, ev.kind, ev.label, value(ev), scope, proxy))
    outcome = outcome_text(ex.outcome)
    return Graph(title, tuple(columns), tuple(nodes),
                 tuple(Edge(a, b, n, h) for a, b, n, h in ordered if a in shown and b in shown), outcome)


def _name(es: EventStructure, e: int) -> str:
    ev = es.events[e]
    return f"e{e} {ev.thread or 'init'}: {ev.label}"


def edges(es: EventStructure, ex: Execution, env: dict) -> dict[str, list[tuple[int, int]]]:
    out = {"rf": sorted(ex.rf), "co": sorted(ex.orders.get("co", ()))}
    for name in ("fr", "sw"):
        if name in env and env[name][0] == "rel":
            out[name] = sorted(env[name][1])
    po = es.relations["po"]
    out["po"] = sorted((a, b) for a, b in po if not any((a, m) in po and (m, b) in po for m in range(len(es.events))))
    return out


def shown_value(ev, v) -> str:
    """A value an event reads or writes, as a reader wants it: an mbarrier state by its fields."""
    return describe_mbarrier(v) if isinstance(v, int) and "MB" in ev.tags else str(v)


def text(es: EventStructure, ex: Execution, env: dict) -> str:
    lines = ["  events:"]
    for ev in es.events:
        val = ""
        if ev.kind == "R":
            val = f"   reads {shown_value(ev, ex.read_values.get(ev.eid, '?'))}"
        lines.append(f"    {_name(es, ev.eid)}{val}")
    for rel, es_ in edges(es, ex, env).items():
        if rel == "po" or not es_:
            continue
        lines.append(f"  {rel}: " + ", ".join(f"e{a}->e{b}" for a, b in es_))
    mbarriers = {ev.loc for ev in es.events if "MB" in ev.tags}
    lines.append("  outcome: " + outcome_text(ex.outcome, lambda k, v: f"({describe_mbarrier(v)})"
                                              if k in mbarriers else v))
    return "\n".join(lines) + "\n"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot(es: EventStructure, ex: Execution, env: dict, title: str = "", positions=None, highlight=()) -> str:
    return graph_dot(graph(es, ex, env, title, positions, highlight))


def graph_dot(g: Graph) -> str:
    """Graphviz text of a Graph: one cluster per thread column, po edges keep the columns straight."""
    lines = ["digraph execution {", f"  label={_q(g.title)}; labelloc=t; rankdir=TB; newrank=true;",
             '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for c in g.columns:
        head = c.name + (f" @ {c.position}" if c.position else "")
        lines.append(f"  subgraph {_q('cluster_' + c.name)} {{ label={_q(head)};")
        for e in c.events:
            n = g.node(e)
            extra = " ".join(x for x in (n.access, f".{n.scope}" if n.scope else "", n.proxy or "") if x)
            shape = ", shape=ellipse" if n.kind in ("F", "B") else ""
            lines.append(f"    e{e} [label={_q(f'e{e}: {n.label}' + chr(10) + extra)}{shape}];")
        lines.append("  }")
    heads = [f"e{c.events[0]}" for c in g.columns if c.events]
    if len(heads) > 1:      # keep the columns in thread order, left to right
        lines.append(f"  {{ rank=same; {'; '.join(heads)}; }}")
        lines += [f"  {a} -> {b} [style=invis];" for a, b in zip(heads, heads[1:])]
    for ed in g.edges:
        color = EDGE_STYLE.get(ed.rel, "black")
        width = ", penwidth=3" if ed.highlight else ""
        weight = ", weight=10" if ed.rel == "po" else ", constraint=false"
        lines.append(f"  e{ed.src} -> e{ed.dst} [label={_q(ed.rel)}, color={_q(color)}, "
                     f"fontcolor={_q(color)}{width}{weight}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
