"""The report as one self-contained HTML page: inline CSS, a little inline JavaScript (filtering),
inline SVG pictures; no external resource of any kind. Wording follows herd and litmus7
(Allowed/Forbidden, Ok/No, Positive/Negative, Never/Sometimes/Always)."""
from __future__ import annotations

import re
from html import escape

from ..harness.compare import BAD
from ..results.result import outcome_text
from ..textsafe import printable
from ..verdict.mutate import THEN
from .analyze import Forbidden, Picture, TestReport
from .jsondoc import summary
from .svg import css as svg_css, defs as svg_defs, legend

STATUS_WORD = {"pass": "Ok", "fail": "No", "error": "Error", "unknown": "Unknown", "undefined": "Undefined",
               "run": "Run"}
STATUS_LABEL = {"pass": "Ok (expectations met)", "fail": "No (expectation failed)", "error": "Error (malformed)",
                "unknown": "Unknown (solver gave up)", "undefined": "Undefined behaviour", "run": "Run (no expectations)"}
HW_WORD = {"ok": "ok", "gap": "coverage gap", "violation": "violation", "harness-error": "harness error",
           "control-seen": "control seen", "control-unseen": "control unseen", "no-data": "no data",
           "timeouts": "timeouts", "hangs": "hangs"}

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);margin:0;background:var(--bg)}
header,main{max-width:1400px;margin:0 auto;padding:0 20px}
header{padding-top:18px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:14px 0 6px}
code,pre,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.meta{color:var(--muted);margin:2px 0}
.interrupted{background:#fff3cd;border:1px solid #e0b000;padding:6px 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:120px;background:var(--soft)}
.card b{display:block;font-size:22px}
.card span{color:var(--muted);font-size:12px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;line-height:19px;
  border:1px solid transparent;white-space:nowrap;margin-right:3px}
.b-allowed{color:#0550ae;background:#ddf4ff;border-color:#80ccff}
.b-forbidden{color:#6639ba;background:#fbefff;border-color:#d8b9ff}
.b-undefined{color:#7d4e00;background:#fff8c5;border-color:#eac54f}
.b-unknown,.b-run,.b-no-data{color:#424a53;background:#eaeef2;border-color:#c8d1da}
.b-ok,.b-pass,.b-control-seen{color:#116329;background:#dafbe1;border-color:#7ee2a8}
.b-no,.b-fail,.b-error,.b-violation,.b-harness-error,.b-control-unseen,.b-timeouts,.b-hangs{color:#a40e26;background:#ffebe9;border-color:#ff8182}
.b-gap{color:#7d4e00;background:#fff8c5;border-color:#eac54f}
.toolbar{display:flex;gap:10px;align-items:center;margin:12px 0;flex-wrap:wrap}
.toolbar input,.toolbar select,.toolbar button{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;background:#fff}
details.test{border:1px solid var(--line);border-radius:8px;margin:6px 0;background:#fff}
details.test>summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
details.test>summary .name{font-weight:600;margin-right:8px}
details.test>summary .file{color:var(--muted);font-size:12px;margin-left:6px}
details.test[open]>summary{border-bottom:1px solid var(--line);background:var(--soft);border-radius:8px 8px 0 0}
.body{padding:6px 14px 12px}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
table.code td{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px;white-space:pre}
.figs{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff;max-width:100%;overflow-x:auto}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);margin-top:4px}
.why{border-left:3px solid #d8b9ff;padding:2px 10px;margin:10px 0}
.bar{display:inline-block;height:10px;background:#0969da;vertical-align:middle;border-radius:2px}
.bar.forbidden{background:#cf222e}
tr.c-violation td{background:#ffebe9}
tr.c-gap td{background:#fff8c5}
ul{margin:4px 0;padding-left:22px}
.small{font-size:12px;color:var(--muted)}
.hidden{display:none}
"""

JS = """
(function(){
  var root=document.documentElement;
  window.addEventListener('error',function(e){root.setAttribute('data-js-error',String(e.message||e));});
  function apply(){
    var q=document.getElementById('filter').value.toLowerCase();
    var st=document.getElementById('status').value;
    var shown=0;
    document.querySelectorAll('details.test').forEach(function(d){
      var ok=(!q||d.getAttribute('data-name').toLowerCase().indexOf(q)>=0)&&(!st||d.getAttribute('data-status')===st);
      d.classList.toggle('hidden',!ok); if(ok){shown++;}
    });
    document.getElementById('shown').textContent=shown+' shown';
  }
  document.getElementById('filter').addEventListener('input',apply);
  document.getElementById('status').addEventListener('change',apply);
  document.getElementById('expand').addEventListener('click',function(){
    document.querySelectorAll('details.test:not(.hidden)').forEach(function(d){d.open=true;});});
  document.getElementById('collapse').addEventListener('click',function(){
    document.querySelectorAll('details.test').forEach(function(d){d.open=false;});});
  function openHash(){
    var d=location.hash&&document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if(d&&d.tagName==='DETAILS'){d.classList.remove('hidden');d.open=true;d.scrollIntoView();}
  }
  window.addEventListener('hashchange',openHash);
  apply();
  openHash();
  root.setAttribute('data-ready','1');
})();
"""


def _e(s) -> str:
    """HTML-escaped, control and invisible formatting characters shown as escapes."""
    return escape(printable(str(s), newlines=True), quote=True)


def badge(word: str, cls: str) -> str:
    return f'<span class="badge b-{_e(cls)}">{_e(word)}</span>'


def slug(name: str) -> str:
    return "t-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def verdict_badge(c) -> tuple[str, str]:
    """A condition's verdict word and its CSS class."""
    return c.verdict, c.verdict.lower()


def _figure(p: Picture) -> str:
    return f"<figure>{p.svg.strip()}<figcaption>{_e(p.caption)}</figcaption></figure>"


def _summary(report) -> str:
    s = summary(report)
    st = s["status"]
    cards = [(s["tests"], "tests")]
    cards += [(st[k], STATUS_LABEL[k]) for k in ("pass", "fail", "error", "unknown", "undefined", "run") if st.get(k)]
    cond = s["conditions"]
    cards += [(cond[k], f"conditions {k}") for k in ("allowed", "forbidden", "unknown") if cond[k]]
    exp = s["expectations"]
    cards += [(exp["met"], "expectations met"), (exp["unmet"], "expectations not met")]
    out = ['<section id="summary"><h2>Summary</h2><div class="cards">']
    out += [f'<div class="card"><b>{n}</b><span>{_e(what)}</span></div>' for n, what in cards]
    out.append("</div>")
    if s["hardware"]:
        out.append('<h3>Hardware</h3><div class="cards">')
        for k in sorted(s["hardware"]):
            out.append(f'<div class="card"><b>{s["hardware"][k]}</b><span>{badge(HW_WORD.get(k, k), k)}'
                       f"</span></div>")
        out.append("</div>")
        out.append('<p class="small">violation: the model forbids an outcome the hardware showed; coverage gap: '
                   "the model allows an outcome the hardware never showed (each such outcome has probability "
                   "below the bound at 95% confidence).</p>")
    hw_bad = {c.test: c for c in report.hardware if c.verdict in BAD}
    failing = [t for t in report.tests if t.result.status not in ("pass", "run") or t.result.name in hw_bad]
    if failing:
        out.append(f"<details{' open' if len(failing) <= 20 else ''}><summary><b>Needing attention: "
                   f"{len(failing)} test(s)</b></summary><table>")
        for t in failing:
            r = t.result
            msg = r.message if len(r.message) <= 180 else r.message[:177] + "..."
            hw = hw_bad.get(r.name)
            if hw is not None:
                msg = (msg + "; " if msg else "") + hw.summary()
            out.append(f'<tr><td><a href="#{slug(r.name)}">{_e(r.name)}</a></td>'
                       f"<td>{badge(STATUS_WORD.get(r.status, r.status), r.status)}"
                       f"{badge('hw: ' + HW_WORD.get(hw.verdict, hw.verdict), hw.verdict) if hw else ''}</td>"
                       f'<td class="small">{_e(msg)}</td></tr>')
        out.append("</table></details>")
    out.append('<details open><summary class="small">How to read the pictures</summary>')
    out.append(f"<figure>{legend().strip()}<figcaption>Events in thread columns (position in the "
               "scope tree under the name), program order downwards; each box shows the instruction, "
               "the access it performs (R/W location=value, F fence, B barrier), its scope and proxy."
               "</figcaption></figure></details>")
    out.append("</section>")
    return "\n".join(out)


def _code(t: TestReport) -> str:
    if not t.code:
        return ""
    rows = max(len(c) for _, _, c in t.code)
    head = "".join(f"<th>{_e(th)}<div class=\"small\">{_e(pos)}</div></th>" for th, pos, _ in t.code)
    body = []
    for i in range(rows):
        body.append("<tr>" + "".join(f"<td>{_e(c[i]) if i < len(c) else ''}</td>" for _, _, c in t.code) + "</tr>")
    return f'<table class="code"><tr>{head}</tr>{"".join(body)}</table>'


def _conditions(t: TestReport) -> str:
    r = t.result
    if not r.conditions:
        return ""
    out = ["<table><tr><th>expected</th><th>condition</th><th>model</th><th></th>"
           "<th>Positive / Negative</th><th>Observation</th></tr>"]
    for c in r.conditions:
        word, cls = verdict_badge(c)
        ok = "" if c.met is None else badge("Ok", "ok") if c.met else badge("No", "no")
        obs = "Never" if c.positive == 0 else ("Always" if c.negative == 0 else "Sometimes")
        extra = "" if c.sane else ' <span class="small">(no execution satisfies it even without axioms)</span>'
        out.append(f"<tr><td>{_e(c.expected or 'query')}</td><td><code>{_e(c.text)}</code>{extra}</td>"
                   f"<td>{badge(word, cls)}</td><td>{ok}</td><td>{c.positive} / {c.negative}</td>"
                   f"<td>{obs}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _forbidden(f: Forbidden) -> str:
    out = [f'<div class="why"><h3>Why <code>{_e(f.condition)}</code> is forbidden</h3>']
    if not f.sane:
        out.append("<p>No well-formed execution satisfies it, even without the model's axioms: "
                   "check the condition's registers and values.</p></div>")
        return "\n".join(out)
    if f.blame:
        sets = " <i>or</i> ".join(" + ".join(f"<b>{_e(a)}</b>" for a in s) for s in f.blame)
        out.append(f"<p>Ruled out by: {sets} <span class=\"small\">(each a minimal set of axioms that "
                   "forbids it on its own)</span></p>")
    if f.violations:
        out.append("<p>A candidate execution with this outcome violates:</p><ul>")
        for v in f.violations:
            out.append(f"<li><b>{_e(v.axiom)}</b> <span class=\"small\">({_e(v.kind)}, {_e(v.where)})</span>: "
                       f"<code>{_e(v.text)}</code></li>")
        out.append("</ul>")
    if f.effects:
        need = f.needed
        if need:
            out.append("<p>Synchronization it depends on (each change alone makes it allowed, the program "
                       "undefined, or the program hang):</p><ul>")
            out += [f"<li><code>{_e(e.mutation.describe())}</code>{_e(THEN.get(e.verdict, ''))}</li>" for e in need]
            out.append("</ul>")
        else:
            out.append("<p>No single fence or release/acquire annotation is needed: it stays forbidden when "
                       "any one is removed.</p>")
        rest = [e for e in f.effects if e not in need]
        if rest:
            items = "".join(f"<li><code>{_e(e.mutation.describe())}</code>: {_e(e.verdict)}"
                            f"{(' (' + _e(e.message) + ')') if e.message else ''}</li>" for e in rest)
            out.append(f'<details><summary class="small">{len(rest)} other change(s) keep it out</summary>'
                       f"<ul>{items}</ul></details>")
    if f.picture is not None:
        out.append(f'<div class="figs">{_figure(f.picture)}</div>')
    out.append("</div>")
    return "\n".join(out)


def _hardware(c) -> str:
    out = [f"<h3>Hardware {badge(HW_WORD.get(c.verdict, c.verdict), c.verdict)}</h3>",
           f'<p class="small">{c.n} instances with an outcome'
           + (f"; an allowed outcome never seen has probability &lt; {c.bound:.2g} (95%)" if c.bound else "")
           + (f"; other={c.other}" if c.other else "") + (f"; timeout={c.timeout}" if c.timeout else "")
           + "</p>"]
    rows = [(o, n, "violation") for o, n in c.violations] + [(o, n, "ok") for o, n in c.witnessed] \
        + [(o, 0, "gap") for o in c.gaps]
    rows.sort(key=lambda x: x[0])
    if rows:
        top = max([n for _, n, _ in rows] + [1])
        out.append("<table><tr><th>outcome</th><th>model</th><th>observed</th><th></th><th>class</th></tr>")
        for o, n, cls in rows:
            model = "forbidden" if cls == "violation" else "allowed"
            width = 0 if n == 0 else max(1, round(200 * n / top))
            out.append(f'<tr class="c-{cls}"><td><code>{_e(outcome_text(o))}</code></td><td>{badge(model.capitalize(), model)}'
                       f'</td><td>{n}</td><td><span class="bar {model}" style="width:{width}px"></span></td>'
                       f"<td>{badge(HW_WORD.get(cls, cls), cls)}</td></tr>")
        out.append("</table>")
    if c.expectations:
        out.append("<ul>" + "".join(f"<li>{_e(e.kind)} <code>{_e(e.text)}</code>: observed {e.observed} "
                                    f"{badge(HW_WORD.get(e.status, e.status), e.status)}</li>"
                                    for e in c.expectations) + "</ul>")
    return "\n".join(out)


def _test(t: TestReport, comparison, open_: bool) -> str:
    r = t.result
    badges = [badge(STATUS_WORD.get(r.status, r.status), r.status)]
    if r.undefined:
        badges.append(badge("Undefined", "undefined"))
    badges += [badge(verdict_badge(c)[0], verdict_badge(c)[1]) for c in r.conditions]
    if comparison is not None:
        badges.append(badge("hw: " + HW_WORD.get(comparison.verdict, comparison.verdict), comparison.verdict))
    out = [f'<details class="test" id="{_e(slug(r.name))}" data-name="{_e(r.name)}" data-status="{_e(r.status)}"'
           f'{" open" if open_ else ""}>',
           f'<summary><span class="name">{_e(r.name)}</span>{"".join(badges)}'
           f'<span class="file">{_e(r.path)}</span></summary><div class="body">']
    if t.doc:
        out.append(f"<p>{_e(t.doc)}</p>")
    meta = [f"file <code>{_e(r.path)}</code>"]
    if r.source:
        meta.append(f"source: {_e(r.source)}")
    if t.hash:
        meta.append(f"hash <code>{_e(t.hash)}</code>")
    if r.matrix_row:
        meta.append("matrix row: " + ", ".join(f"{_e(k)}={_e(v)}" for k, v in r.matrix_row))
    out.append(f'<p class="small">{" · ".join(meta)}</p>')
    if r.message:
        out.append(f"<p><b>{_e(STATUS_WORD.get(r.status, r.status))}:</b> {_e(r.message)}</p>")
    out += [f'<p class="small">note: {_e(n)}</p>' for n in r.notes]
    out.append(_code(t))
    for u in r.undefined:
        out.append(f"<p>{badge('Undefined', 'undefined')} {_e(u.why)}</p>")
    if t.undefined is not None:
        out.append(f'<div class="figs">{_figure(t.undefined)}</div>')
    if r.outcomes and not r.undefined:
        states = "".join(f"<li><code>{_e(outcome_text(o))}</code></li>" for o in r.outcomes)
        out.append(f"<h3>States {len(r.outcomes)}{'' if r.complete else ' (enumeration stopped at the cap)'}"
                   f"</h3><ul>{states}</ul>")
        if t.formula:
            out.append(f"<p>Formula: <code>{_e(t.formula)}</code></p>")
    out.append(_conditions(t))
    if comparison is not None:
        out.append(_hardware(comparison))
    out += [_forbidden(f) for f in t.forbidden]
    a = getattr(t, "advice", None)
    if a is not None:
        out.append(f"<h3>{_e(a.title)}</h3><p>{_e(a.summary)}</p>"
                   + ("<ul>" + "".join(f"<li><code>{_e(x)}</code></li>" for x in a.lines) + "</ul>" if a.lines else ""))
    if t.witnesses:
        out.append("<h3>Allowed outcomes: witness executions</h3>")
        out.append('<div class="figs">' + "".join(_figure(p) for _, p in t.witnesses) + "</div>")
        if t.more_outcomes:
            out.append(f'<p class="small">{t.more_outcomes} more allowed outcome(s) without a picture.</p>')
    if getattr(t, "hang", None) is not None:
        out.append("<h3>Hang: the blocked loop's last iteration</h3>")
        out.append(f'<div class="figs">{_figure(t.hang)}</div>')
    if t.note:
        out.append(f'<p class="small">{_e(t.note)}</p>')
    out.append("</div></details>")
    return "\n".join(out)


def render(report) -> str:
    names = {t.result.name for t in report.tests}
    opts = ", ".join(report.options) or "none"
    head = [f"<h1>{_e(report.title)}</h1>",
            f'<p class="meta">model <code>{_e(report.model)}</code> (hash <code>{_e(report.model_hash)}</code>), '
            f"options: {_e(opts)}, engine {_e(report.engine)} · inputs: "
            + ", ".join(f"<code>{_e(p)}</code>" for p in report.inputs) + "</p>"]
    if report.interrupted:
        head.append(f'<p class="interrupted" id="interrupted"><b>Interrupted: {report.interrupted[0]} of '
                    f'{report.interrupted[1]} tests run.</b> The report is complete for the tests it holds.</p>')
    if report.hw_files:
        head.append('<p class="meta">hardware histograms: '
                    + ", ".join(f"<code>{_e(p)}</code>" for p in report.hw_files) + "</p>")
    statuses = sorted({t.result.status for t in report.tests})
    toolbar = ('<div class="toolbar"><input id="filter" type="search" placeholder="filter by name">'
               '<select id="status"><option value="">every status</option>'
               + "".join(f'<option value="{_e(s)}">{_e(STATUS_WORD.get(s, s))} ({_e(s)})</option>' for s in statuses)
               + '</select><button id="expand" type="button">expand all</button>'
               '<button id="collapse" type="button">collapse all</button><span id="shown" class="small"></span></div>')
    # Open: the first test with pictures, and the failing ones when there are few of them.
    first_open = next((i for i, t in enumerate(report.tests) if t.witnesses or t.forbidden), None)
    failing = [t for t in report.tests if t.result.status not in ("pass", "run")]
    tests = [_test(t, report.comparison(t.result.name),
                   i == first_open or (len(failing) <= 10 and t.result.status not in ("pass", "run")))
             for i, t in enumerate(report.tests)]
    extra = ""
    orphans = [c for c in report.hardware if c.test not in names]
    if orphans:
        extra = ('<section id="hardware-only"><h2>Hardware results for tests not in this report</h2>'
                 + "\n".join(f"<div>{_e(c.test)}: {_hardware(c)}</div>" for c in orphans) + "</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(report.title)}</title><style>{CSS}{svg_css()}</style></head>\n<body>\n<header>"
            + svg_defs() + "\n".join(head) + "</header>\n<main>\n" + _summary(report)
            + f'\n<section id="tests"><h2>Tests</h2>{toolbar}\n' + "\n".join(tests) + "\n</section>\n"
            + extra + f"\n</main>\n<script>{JS}</script>\n</body></html>\n")
