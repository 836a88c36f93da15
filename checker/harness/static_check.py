"""Static checks of a generated program, read back from its CUDA source (no GPU, no toolchain):
proof, before a GPU is ever met, that

  * every wait the harness emits can complete: for each mbarrier that an asynchronous operation
    completes on, the epilogue waits for it, and the arrivals (prologue + the test's emitted
    instructions + the epilogue's make-up) equal its count, and the transaction bytes announced
    equal the bytes the emitted copies deliver (so phase 0 completes, and only once the data has
    landed);
  * every shared-memory (and global) address operand meets the alignment its instruction needs
    (128 bytes for tensor copies and tensor maps, 16 for bulk copies, 8 for mbarriers, the access
    size otherwise);
  * every spin is bounded: each backward `goto` of a litmus thread's loop counts against
    SPIN_CAP and gives up (a `hang`), each await loop gives up after SPIN_CAP polls, and every
    spin (the harness's too) also gives up after SPIN_NS of %globaltimer; and no
    barrier or mbarrier arrival/transaction is guarded, inside a loop, or after a loop a thread
    may give up (it would be skipped, leaving other threads or the epilogue waiting forever);
  * the program is built for its device configuration's target; every `.bulk_group` copy is
    committed before the epilogue waits for bulk groups; the harness never prefetches a tensor
    map in a test that acquires one itself (reviews B3, A1, A2: such programs are refused).

This module parses what codegen emitted (the tables, the address variables, each `asm volatile`
statement and its operands), independently of codegen's own bookkeeping
(checker.harness.mbarriers). That every access survives ptxas is checked on the compiled cubin by
checker.harness.sass.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from math import gcd

from .codegen import Program

_ASM = re.compile(r'asm volatile\("((?:[^"\\]|\\.)*)"\s*:(.*?):(.*?):\s*"memory"\);')
_OPERAND = re.compile(r'"=?[a-z]+"\((.*?)\)(?:,|$)')
_ADDR_VAR = re.compile(r"\b(A_\w+)\b")
_CASE = re.compile(r"^\s*case (\d+): \{   // (\S+) at \S+, role CTA (\d+)")
_MARK = re.compile(r"// @ptxmc (\S+):(\d+)")


@dataclass(frozen=True)
class Place:
    """Where an address variable points: space ('shared', 'smap', 'global', 'tmap'), the index of
    the location in its table (for shared memory: the slot), the alignment guaranteed for every
    instance, and for shared memory the role CTA whose memory it is."""

    space: str
    index: int
    align: int
    cta: int = -1


def _macro(src: str, name: str) -> int:
    m = re.search(rf"^#define {name} (\d+)", src, re.M)
    if m is None:
        raise ValueError(f"no #define {name}")
    return int(m.group(1))


def _table(src: str, name: str) -> list[int]:
    m = re.search(rf"\b{name}\[[^\]]*\] = \{{([^}}]*)\}}", src)
    if m is None:
        raise ValueError(f"no table {name}")
    return [int(x.strip().rstrip("u")) for x in m.group(1).split(",") if x.strip()]


def _places(src: str, role_cta: int = 0) -> dict[str, Place]:
    """The address variables defined in `src` (one role case), for a thread in `role_cta`."""
    smem_align, slot = _macro(src, "SMEM_ALIGN"), _macro(src, "SLOT_WORDS")
    stride, cell = _macro(src, "STRIDE_CELLS"), _macro(src, "CELL_WORDS")
    cluster = _macro(src, "CLUSTER")
    shared_align = gcd(smem_align, slot * 4)
    global_align = gcd(256, stride * cell * 4)        # cudaMalloc / VMM bases are 256-byte aligned
    out = {}
    for m in re.finditer(r"const unsigned(?: long long)? (A_\w+) = (.*);", src):
        var, expr = m.group(1), m.group(2)
        if (s := re.search(r"smem \+ \((\d+) \* PER_WARP \+ slot\) \* (\w+)\)", expr)):
            rank = re.search(r",\s*(\d+)u\)$", expr)
            cta = role_cta // cluster * cluster + int(rank.group(1)) if rank else role_cta
            align = shared_align if s.group(2) == "SLOT_WORDS" else gcd(smem_align, 4)
            out[var] = Place("shared", int(s.group(1)), align, cta)
        elif (s := re.search(r"smaps \+ \((\d+) \* PER_WARP \+ slot\) \* 32\)", expr)):
            out[var] = Place("smap", int(s.group(1)), 128)
        elif (s := re.search(r"tmap_at\(p, (\d+), inst\)", expr)):
            out[var] = Place("tmap", int(s.group(1)), 128)
        elif (s := re.search(r"gcell\(p, (\d+), inst\)", expr)):
            out[var] = Place("global", int(s.group(1)), global_align)
    return out


def _split_args(text: str) -> list[str]:
    """The C expressions of an asm operand list ('"r"(x), "l"((A + p.zero[1]))')."""
    out, depth, cur, quoted = [], 0, "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if not quoted and ch == "(":
            depth += 1
        if not quoted and ch == ")":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return [re.sub(r'^"=?[a-z]+"\((.*)\)$', r"\1", a) for a in out]


@dataclass(frozen=True)
class Stmt:
    thread: str
    index: int
    ptx: str                   # the template with %n replaced by the C expressions
    operands: tuple[str, ...]
    template: str = ""         # the asm template as emitted (%n operands)
    role_cta: int = 0
    places: dict = None        # the address variables of its role case

    def addresses(self) -> list[str]:
        """The C expression of each [...] address operand, in order (a tensor operand [%2, {%1}]:
        the map's)."""
        out = []
        for b in re.findall(r"\[([^\[\]]*)\]", self.template):
            m = re.match(r"\s*%(\d+)", b)
            if m and int(m.group(1)) < len(self.operands):
                out.append(self.operands[int(m.group(1))])
        return out


def _cases(src: str) -> list[tuple[int, str]]:
    """(role CTA, text) of each role case of the litmus kernel."""
    out, cur, cta = [], [], None
    for line in src.splitlines():
        m = _CASE.match(line)
        if m or line.strip() == "default:":
            if cta is not None:
                out.append((cta, "\n".join(cur)))
            cta, cur = (int(m.group(3)) if m else None), []
        if cta is not None:
            cur.append(line)
    return out


def statements(src: str) -> list[Stmt]:
    """The test's emitted instructions (marked lines), each with its operand expressions, role CTA
    and the address variables of its case."""
    out = []
    head = src[:src.index("__global__")] if "__global__" in src else src
    for cta, text in _cases(src):
        places = _places(head + "\n" + text, cta)
        out += _statements(text, cta, places)
    return out


def _statements(src: str, cta: int, places: dict) -> list[Stmt]:
    out = []
    for line in src.splitlines():
        mark = _MARK.search(line)
        if not mark:
            continue
        m = _ASM.search(line)
        if not m:
            continue
        tmpl = m.group(1).replace('\\"', '"')
        ops = _split_args(m.group(2)) + _split_args(m.group(3))

        def sub(k):
            n = int(k.group(1))
            return ops[n] if n < len(ops) else k.group(0)
        out.append(Stmt(mark.group(1), int(mark.group(2)), re.sub(r"%(\d+)", sub, tmpl), tuple(ops), tmpl, cta, places))
    return out


def _mnemonic(ptx: str) -> str:
    text = re.sub(r"^\{\s*\.reg \.pred \w+;\s*", "", ptx.strip())
    return text.split()[0] if text.split() else ""


def _var(expr: str) -> str | None:
    m = _ADDR_VAR.search(expr)
    return m.group(1) if m else None


def _needs(mn: str, k: int, n_addr: int, ptx: str, space: str) -> int:
    """Alignment (bytes) the k-th of `n_addr` address operands of instruction `mn` needs, the
    operand pointing into `space` (PTX ISA and CUDA Programming Guide alignment rules)."""
    q = mn.split(".")
    last = k == n_addr - 1
    if (q[0] == "mbarrier" or (q[0] == "cp" and "mbarrier" in q and "arrive" in q)
            or (last and n_addr > 1 and ("mbarrier::complete_tx::bytes" in q or (q[0] in ("st", "red") and "async" in q)))):
        return 8
    if q[0] == "fence":
        return 1
    if q[0] == "tensormap":
        return 128
    if q[0] == "cp" and "tensor" in q:
        return 128 if space == "shared" else 64       # shared box: 128 B; a CUtensorMap: 64 B
    if q[0] == "cp" and ("bulk" in q or "reduce" in q):
        return 16
    if q[0] == "cp" and "async" in q:
        m = re.search(r"\], ([0-9]+);", ptx)     # the template: the size is a literal
        return int(m.group(1)) if m else 4
    for t, n in (("b64", 8), ("u64", 8), ("s64", 8), ("f64", 8), ("b16", 2), ("u16", 2), ("b8", 1), ("u8", 1)):
        if t in q:
            return n
    return 4


def alignment_problems(program: Program) -> list[str]:
    src = program.source
    out = []
    for st in statements(src):
        places = st.places
        mn = _mnemonic(st.ptx)
        addrs = st.addresses()
        for k, expr in enumerate(addrs):
            var = _var(expr)
            if var is None or var not in places:
                continue
            need = _needs(mn, k, len(addrs), st.template, places[var].space)
            have = places[var].align
            if have % need:
                out.append(f"{st.thread}:{st.index} '{mn}': operand {var} is {have}-byte aligned, "
                           f"the instruction needs {need}")
    return out


@dataclass
class _Tally:
    count: int = 0
    arrivals: int = 0
    expected: int = 0
    completed: int = 0
    completes_here: bool = False
    init_in_code: bool = False


def _imm(expr: str) -> int | None:
    m = re.fullmatch(r"\(?(\d+)u?(?:ll)?\)?", expr.strip())
    return int(m.group(1)) if m else None


def wait_problems(program: Program) -> list[str]:
    """Every mbarrier an emitted asynchronous operation completes on is awaited by the epilogue,
    and that wait can complete: count == arrivals and expected bytes == delivered bytes. Keys are
    (slot, role CTA): a multicast copy delivers to the slot of its mbarrier in each CTA of its mask."""
    src = program.source
    cell_bytes = _macro(src, "CELL_WORDS") * 4
    cluster = _macro(src, "CLUSTER")
    ctas = _macro(src, "UNITS") * cluster
    counts, expect = _table(src, "shared_mbarrier"), _table(src, "shared_expect")
    n_cells = _macro(src, "N_SHARED") * ctas
    tally = {(k // ctas, k % ctas): _Tally(count=counts[k], arrivals=1 if expect[k] else 0, expected=expect[k])
             for k in range(n_cells)}

    def loc(st, expr):
        p = st.places.get(_var(expr) or "")
        return (p.index, p.cta) if p is not None and p.space == "shared" else None

    for st in statements(src):
        mn = _mnemonic(st.ptx)
        q = mn.split(".")
        addrs = st.addresses()
        rest = re.sub(r"%(\d+)", lambda k: st.operands[int(k.group(1))] if int(k.group(1)) < len(st.operands) else "",
                      st.template.split("]")[-1])          # operands after the last address
        imms = [int(x) for x in re.findall(r"(?<![%\w])(\d+)u?(?:ll)?\b", rest)]
        if q[0] == "mbarrier" and addrs:
            key = loc(st, addrs[0])
            if key is None:
                continue
            t = tally[key]
            if q[1] == "init":
                t.count, t.init_in_code = (imms[0] if imms else 1), True
            elif q[1] in ("arrive", "arrive_drop"):
                if "expect_tx" in q:
                    t.arrivals += 1
                    t.expected += imms[0] if imms else 0
                else:
                    t.arrivals += imms[0] if imms else 1
            elif q[1] == "expect_tx":
                t.expected += imms[0] if imms else 0
            elif q[1] == "complete_tx":
                t.completed += imms[0] if imms else 0
        elif q[0] == "cp" and "mbarrier" in q and "arrive" in q and "noinc" in q and addrs:
            key = loc(st, addrs[0])
            if key is not None:
                tally[key].arrivals += 1
        elif "mbarrier::complete_tx::bytes" in mn and addrs:
            key = loc(st, addrs[-1])
            if key is None:
                continue
            if q[0] == "cp":
                size = cell_bytes if "tensor" in q else None
                if size is None:
                    m = re.search(r"\], ?(\d+), ?\[", st.template)
                    size = int(m.group(1)) if m else 0
            else:
                size = 8 if any(x in q for x in ("b64", "u64", "s64")) else 4
            keys = [key]
            if "multicast::cluster" in q:      # the same slot in each CTA of the mask
                mask = imms[-1] if imms else 0
                base = st.role_cta // cluster * cluster
                keys = [(key[0], base + r) for r in range(cluster) if mask >> r & 1]
            for kk in keys:
                if kk not in tally:
                    tally[kk] = _Tally()
                tally[kk].completed += size
                tally[kk].completes_here = True
    waited = {}
    for m in re.finditer(r"role_cta == (\d+) && threadIdx.x < PER_WARP\) \{   // (\S+):.*?\n.*?smem \+ \((\d+) \* PER_WARP \+ "
                         r"threadIdx\.x\) \* SLOT_WORDS\), ok_ = 0;(.*?)for \(unsigned n_", src, re.S):
        key = (int(m.group(3)), int(m.group(1)))
        made = {kind: int(n) for n, kind in re.findall(r'"r"\((\d+)u\) : "memory"\);   // (\w+)', m.group(4))}
        waited[key] = (made.get("arrive", 0), m.group(2))
        tally.setdefault(key, _Tally())
        tally[key].expected += made.get("expect", 0)
        tally[key].completed += made.get("complete", 0)
    out = []
    for key, t in sorted(tally.items()):
        if not t.completes_here:
            continue
        name = f"'{waited[key][1]}'" if key in waited else f"slot {key[0]} of role CTA {key[1]}"
        if key not in waited:
            out.append(f"{name}: asynchronous operations complete on it but the epilogue never waits for it "
                       f"(a CTA could exit with a copy in flight)")
            continue
        if t.count <= 0:
            out.append(f"{name}: the epilogue waits on an mbarrier nothing initialises")
        total = t.arrivals + waited[key][0]
        if total != t.count:
            out.append(f"{name}: phase 0 needs {t.count} arrivals, the program makes {total} "
                       f"({t.arrivals} + {waited[key][0]} in the epilogue): the epilogue wait "
                       f"{'can never complete' if total < t.count else 'may see a later phase'}")
        if t.expected != t.completed:
            out.append(f"{name}: {t.expected} transaction bytes expected, {t.completed} delivered: phase 0 "
                       f"{'never completes' if t.expected > t.completed else 'can complete before the data lands'}")
    return out


_LABEL = re.compile(r"^\s*(L\d+_\w+): ;")
_GOTO = re.compile(r"goto (L\d+_\w+);")
_BOUNDED_GOTO = re.compile(r"if \(spin_give_up\(\+\+spins_, spin0_\)\) \{ hung_ = 1; goto END_\d+; \} goto (L\d+_\w+);")
_ACCOUNTED = re.compile(r'asm volatile\("(?:bar|barrier|mbarrier\.(?:arrive|expect_tx|complete_tx|init|inval)|'
                        r'[^"]*mbarrier::complete_tx|[^"]*\.async\.[^"]*mbarrier)')


def spin_problems(program: Program) -> list[str]:
    """Every loop of a role case is bounded, and nothing the static accounting counts (barriers,
    mbarrier arrivals and transaction bytes) is skipped or repeated by the test's control flow."""
    out = []
    for cta, text in _cases(program.source):
        lines = text.splitlines()
        labels = {m.group(1): n for n, line in enumerate(lines) if (m := _LABEL.match(line))}
        first_spin, loops = None, []
        for n, line in enumerate(lines):
            for target in _GOTO.findall(line):
                if target not in labels:
                    out.append(f"role CTA {cta}: goto {target}: no such label")
                elif labels[target] <= n:
                    if target not in _BOUNDED_GOTO.findall(line):
                        out.append(f"role CTA {cta}: the backward goto {target} is not bounded by SPIN_CAP / SPIN_NS: "
                                   f"{line.strip()[:120]}")
                    loops.append((labels[target], n))
                    first_spin = n if first_spin is None else min(first_spin, n)
            if "for (unsigned n_ = 0;;" in line and "spin_give_up(n_, since_)" not in "".join(lines[n:n + 4]):
                out.append(f"role CTA {cta}: an await loop without the SPIN_CAP / SPIN_NS bound: {line.strip()[:120]}")
        forward = [(n, labels[t]) for n, line in enumerate(lines) for t in _GOTO.findall(line)
                   if t in labels and labels[t] > n and "spins_" not in line]
        for n, line in enumerate(lines):
            if not _ACCOUNTED.search(line) or not _MARK.search(line):
                continue
            why = None
            if line.lstrip().startswith("if (") and not line.lstrip().startswith("if (wg_lead_) {"):
                why = "guarded"          # (a warpgroup's leader performs its writes once: not a guard)
            elif any(a <= n <= b for a, b in loops):
                why = "inside a spin loop"
            elif any(a < n < b for a, b in forward):
                why = "skipped by a forward branch"
            elif first_spin is not None and n > first_spin:
                why = "after a spin loop that may give up"
            if why:
                m = _MARK.search(line)
                out.append(f"{m.group(1)}:{m.group(2)}: a barrier or mbarrier arrival {why}: the "
                           f"threads or the epilogue waiting for it could wait forever")
    return out


_SPIN_LOOP = re.compile(r"for \(unsigned (n_?) = 0")


def time_bound_problems(program: Program) -> list[str]:
    """Every spin of the program, the harness's included (start barrier, awaits, epilogue waits),
    gives up after SPIN_CAP polls or SPIN_NS nanoseconds of %globaltimer (review B4)."""
    lines = program.source.splitlines()
    out = []
    for n, line in enumerate(lines):
        m = _SPIN_LOOP.search(line)
        if m and f"spin_give_up({m.group(1)}," not in "".join(lines[n:n + 5]):
            out.append(f"line {n + 1}: a spin not bounded in time (spin_give_up): {line.strip()[:120]}")
    if lines and not re.search(r"^#define SPIN_NS \d+ull", program.source, re.M):
        out.append("no SPIN_NS time bound")
    return out


def target_problems(program: Program) -> list[str]:
    """The program is built for its device configuration's target (review B3: an sm_100a program
    under the h100 configuration never loads on an H100/H200)."""
    m = re.search(r"^// Target: (\S+)", program.source, re.M)
    built = m.group(1) if m else program.target
    if built != program.config.target or program.target != program.config.target:
        return [f"built for {built}, but the device configuration '{program.config.name}' targets "
                f"{program.config.target}: it would not load on that device"]
    return []


def bulk_group_problems(program: Program) -> list[str]:
    """Every `.bulk_group` copy of the test is committed before the epilogue's `wait_group 0`:
    wait_group waits for committed groups only, so an uncommitted copy could still read the CTA's
    shared memory after the CTA exits (review A1). The epilogue commits before it waits."""
    copies = [st for st in statements(program.source) if "bulk_group" in _mnemonic(st.ptx).split(".")]
    if not copies:
        return []
    src = program.source
    epi = src[src.find("// Epilogue"):] if "// Epilogue" in src else ""
    commit, wait = epi.find('"cp.async.bulk.commit_group;"'), epi.find('"cp.async.bulk.wait_group 0;"')
    if commit < 0 or wait < 0 or commit > wait:
        st = copies[0]
        return [f"{st.thread}:{st.index} '{_mnemonic(st.ptx)}': the epilogue does not commit bulk groups before "
                f"it waits for them (cp.async.bulk.commit_group before cp.async.bulk.wait_group 0): the copy "
                f"may still read shared memory when the CTA exits"]
    return []


def prefetch_problems(program: Program) -> list[str]:
    """The harness prefetches a tensor map only in tests that never acquire one themselves
    (review A2: a prefetch in flight at the test's acquire could cache the stale descriptor after
    the acquire invalidated it)."""
    src = program.source
    if "prefetch.tensormap" not in src:
        return []
    acq = [st for st in statements(src) if "tensormap::generic" in st.ptx and ".acquire" in _mnemonic(st.ptx)]
    harness = any("prefetch.tensormap" in line and "@ptxmc" not in line for line in src.splitlines())
    if acq and harness:
        st = acq[0]
        return [f"{st.thread}:{st.index}: the test acquires a tensor map, and the harness prefetches one before "
                f"the test starts: the prefetch could complete after the acquire and leave a stale descriptor"]
    return []


def checked_programs(tests, config, cuda: str | None = None):
    """(programs that pass every check, [(test name, reason)] for the others): every test is
    accounted for, as not expressible (checker.harness.codegen.unsupported) or refused by the
    static check. `cuda`: the toolchain release (forms it cannot assemble are not expressible).
    Every command that builds or runs programs takes them from here."""
    from .codegen import generate, unsupported
    progs, skipped = [], []
    for t in tests:
        why = unsupported(t, config, cuda)
        if why:
            skipped.append((t.name, why))
            continue
        p = generate(t, config, cuda)
        problems = check_program(p)
        if problems:
            skipped.append((t.name, "refused by the static check: " + "; ".join(problems)))
        else:
            progs.append((t, p))
    return progs, skipped


def check_program(program: Program) -> list[str]:
    """Every problem the static checks find in `program` (empty: it passes)."""
    return [f"{program.test}: {p}" for p in wait_problems(program) + alignment_problems(program)
            + spin_problems(program) + time_bound_problems(program) + target_problems(program)
            + bulk_group_problems(program) + prefetch_problems(program)]
