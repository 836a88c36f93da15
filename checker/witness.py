"""One execution as text and as a DOT graph: events in thread columns, po/rf/co/fr/sw edges
(herd's colours), values read and written."""
from __future__ import annotations

from .events import EventStructure
from .execution import Execution

EDGE_STYLE = {"po": "black", "rf": "red", "co": "blue", "fr": "orange", "sw": "darkgreen"}


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


def text(es: EventStructure, ex: Execution, env: dict) -> str:
    lines = ["  events:"]
    for ev in es.events:
        val = ""
        if ev.kind == "R":
            val = f"   reads {ex.read_values.get(ev.eid, '?')}"
        lines.append(f"    {_name(es, ev.eid)}{val}")
    for rel, es_ in edges(es, ex, env).items():
        if rel == "po" or not es_:
            continue
        lines.append(f"  {rel}: " + ", ".join(f"e{a}->e{b}" for a, b in es_))
    lines.append("  outcome: " + " ".join(f"{k}={v};" for k, v in ex.outcome))
    return "\n".join(lines) + "\n"


def dot(es: EventStructure, ex: Execution, env: dict, title: str = "") -> str:
    lines = ["digraph execution {", f'  label="{title}"; rankdir=TB; node [shape=box, fontsize=10];']
    threads = sorted({ev.thread for ev in es.events if ev.thread}, key=lambda t: es.thread_names.index(t))
    init = [ev for ev in es.events if ev.thread is None]
    if init:
        lines.append('  subgraph cluster_init { label="init";')
        lines += [f'    e{ev.eid} [label="{ev.label}"];' for ev in init]
        lines.append("  }")
    for t in threads:
        lines.append(f'  subgraph "cluster_{t}" {{ label="{t}";')
        for ev in es.events:
            if ev.thread == t:
                tag = ",".join(sorted(ev.tags & {"ASYNC", "TMAP", "GEN"})) or ""
                lines.append(f'    e{ev.eid} [label="{ev.label}\\n{tag}"];')
        lines.append("  }")
    for rel, pairs in edges(es, ex, env).items():
        for a, b in pairs:
            lines.append(f'  e{a} -> e{b} [label="{rel}", color={EDGE_STYLE[rel]}, fontcolor={EDGE_STYLE[rel]}];')
    lines.append("}")
    return "\n".join(lines) + "\n"
