"""XLA's FileCheck expectations, checked structurally against our printed module.

A ``// CHECK: [[x:%[^ ]+]] = f32[4,5]{1,0} add([[a]], [[b:%[^ ]+]]), dimensions={0}``
line says: a later instruction prints exactly that shape and opcode, its
operands are the instructions bound to ``a`` (and anything, bound to ``b``),
and its text contains every ``key=value`` attribute written without patterns.
``CHECK-NEXT`` must be the very next instruction; ``CHECK-SAME`` continues the
previous line's text (compared without whitespace). Names are bound by
position, as FileCheck does: the first match in order wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hlo.ir import Module
from hlo.printer import print_instruction

_LINE = re.compile(r"//\s*CHECK(?P<kind>-NEXT|-SAME)?(?:\{LITERAL\})?:\s*(?P<body>.*)$")
_DEF = re.compile(r"^(?P<root>ROOT\s+)?(?P<lhs>%?\[\[.*?\]\](?=\s*=)|\S+)\s*=\s*(?P<rest>.*)$")
_VAR = re.compile(r"\[\[(?P<name>\w+)(?::.*?)?\]\]")


@dataclass
class Fact:
    kind: str  # "", "-NEXT", "-SAME"
    body: str


def facts(expected: str) -> list[Fact]:
    out = []
    for line in expected.splitlines():
        m = _LINE.search(line)
        if m:
            out.append(Fact(m.group("kind") or "", m.group("body").strip()))
    return out


def post_order(comp):  # noqa: ANN001, ANN201
    """Instructions in the order XLA prints them: depth-first from the root,
    operands first and in operand order (unreachable ones after, in text order)."""
    by_name = {i.name: i for i in comp.instructions}
    seen: set[str] = set()
    out = []

    def visit(name: str) -> None:
        stack = [(name, False)]
        while stack:
            n, done = stack.pop()
            if done:
                out.append(by_name[n])
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            stack.extend((o, False) for o in reversed(by_name[n].operands) if o not in seen)

    visit(comp.root)
    out += [i for i in comp.instructions if i.name not in seen]
    return out


def _split_args(text: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _shape_and_call(rest: str) -> tuple[str, str, str, str]:
    """(shape text, opcode, argument text, attribute text) of a definition's right side."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            shape, call = rest[:i], rest[i + 1 :].strip()
            break
    else:
        raise ValueError(f"cannot split {rest!r}")
    opcode, _, after = call.partition("(")
    depth, end = 1, 0
    for j, ch in enumerate(after):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = j
                break
    else:
        end = len(after)
    return shape.strip(), opcode.strip(), after[:end], after[end + 1 :]


def _var(text: str) -> tuple[str, bool] | None:
    """(variable, binds) for ``[[x]]``/``%[[x]]`` (use) or ``[[x:..]]`` (binding)."""
    m = _VAR.search(text)
    if m is None:
        return None
    return m.group("name"), ":" in m.group(0)


def check(module: Module, expected: str) -> None:
    """Assert the FileCheck facts of ``expected`` on the entry computation of ``module``."""
    comp = module.entry
    lines = [(i, print_instruction(i, comp, short=True)) for i in post_order(comp)]
    bound: dict[str, str] = {}
    at = -1
    last_text = ""
    for fact in facts(expected):
        if fact.kind == "-SAME":
            body = re.sub(r"\s+", "", fact.body)
            assert body in re.sub(r"\s+", "", last_text), (
                f"CHECK-SAME {fact.body!r} not in {last_text!r}"
            )
            continue
        m = _DEF.match(fact.body)
        if m and "[[" not in m.group("lhs") and not m.group("lhs").startswith("%"):
            m = None  # "f32[2]{0} bitcast(...)": no name on the left
        lhs, is_root, rest = (
            (m.group("lhs"), bool(m.group("root")), m.group("rest"))
            if m
            else (None, False, fact.body)
        )
        shape, opcode, args, attrs = _shape_and_call(rest)
        candidates = range(at + 1, at + 2) if fact.kind == "-NEXT" else range(at + 1, len(lines))
        found = None
        for k in candidates:
            if k >= len(lines):
                break
            instr, text = lines[k]
            trial = dict(bound)
            if _matches(instr, text, lhs, is_root, comp.root, shape, opcode, args, attrs, trial):
                found, bound = k, trial
                break
        assert found is not None, (
            f"no instruction matches CHECK{fact.kind}: {fact.body}\nafter line {at}:\n"
            + "\n".join(t for _, t in lines)
        )
        at = found
        last_text = lines[found][1]


def _matches(instr, text, lhs, is_root, root, shape, opcode, args, attrs, bound) -> bool:  # noqa: ANN001
    if str(instr.shape) != shape or instr.opcode != opcode:
        return False
    if is_root and instr.name != root:
        return False
    if lhs is not None and not _bind(lhs, instr.name, bound):
        return False
    if args.strip() and not any(p in args for p in ("[[", "{{", "%")):
        if f"{opcode}({args})" not in text:
            return False
    elif args.strip():
        wanted = _split_args(args)
        if not (len(wanted) == 1 and wanted[0] == "{{.*}}"):
            if len(wanted) != len(instr.operands):
                return False
            for w, actual in zip(wanted, instr.operands):
                if w == "{{.*}}":
                    continue
                if not _bind(w, actual, bound):
                    return False
    for attr in _split_args(attrs.lstrip(", ")):
        if "[[" in attr or "{{" in attr or "=" not in attr:
            continue
        if attr not in text:
            return False
    return True


def _bind(pattern: str, name: str, bound: dict[str, str]) -> bool:
    v = _var(pattern)
    if v is None:
        return pattern.lstrip("%") == name
    var, binds = v
    if binds:
        if var in bound and bound[var] != name:
            return False
        bound[var] = name
        return True
    return bound.get(var) == name
