"""Every ``hlo-layout`` command at an earlier commit and in the working tree, outputs compared.

    python3 bench/cli_side_by_side.py --base 6e1ad3c

Each case runs as a fresh process in both trees (the earlier commit checked out with ``git
worktree`` into a temporary folder, removed afterwards) with the same arguments; the exit
code, standard output and standard error must be the same, apart from wall-clock numbers
(``time_ms`` rows, ``timings_ms``) and the temporary folder's name. Files a case writes
(``-o``, ``--report``) are compared too, JSON reports key by key without timings. A case that
differs prints both sides; the last line counts the cases that agree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
CASES = SHARED / "xla-cases"

BAD_PARSE = "HloModule m\n\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] frobnicate(p)\n}\n"
BAD_VERIFY = "HloModule m\n\nENTRY main {\n  p = f32[2] parameter(0)\n  q = f32[3] add(p, p)\n  ROOT r = f32[4] add(p, p)\n}\n"
BITCAST = "HloModule b\n\nENTRY e {\n  p = f32[2,3] parameter(0)\n  ROOT b = f32[3,2] bitcast(p)\n}\n"
TIE = "HloModule m\n\nENTRY e {{\n  a = f32[4,6]{{1,0}} parameter(0)\n  ROOT n = f32[4,6]{{{}}} negate(a)\n}}\n"


def cases(tmp: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every case; ``{out}`` in an argument is a per-run output folder."""
    files = {"bad_parse.hlo": BAD_PARSE, "bad_verify.hlo": BAD_VERIFY, "bitcast.hlo": BITCAST,
             "tie_good.hlo": TIE.format("1,0"), "tie_bad.hlo": TIE.format("0,1"), "empty.hlo": ""}
    for name, text in files.items():
        (tmp / name).write_text(text)
    c = lambda stem, stage: str(CORPUS / f"{stem}.{stage}.hlo")  # noqa: E731
    split = str(CASES / "files" / "backends__gpu__tests__dot_bf16.hlo")
    rln = CASES / "reduction_layout_normalizer_test"
    variadic = str(rln / "LayoutCanonicalizerTestVariadicDifferentLayouts.hlo")
    out: list[tuple[str, list[str]]] = [
        ("fmt", ["fmt", c("mlp_train", "after_layout")]),
        ("fmt --short", ["fmt", "--short", c("attention_fwd", "pre")]),
        ("fmt split file", ["fmt", split]),
        ("fmt parse error", ["fmt", str(tmp / "bad_parse.hlo")]),
        ("fmt empty", ["fmt", str(tmp / "empty.hlo")]),
        ("fmt missing", ["fmt", str(tmp / "missing.hlo")]),
        ("check", ["check", c("mlp_train", "after_layout")]),
        ("check --layouts", ["check", c("mlp_train", "after_layout"), "--layouts"]),
        ("check violations", ["check", c("mlp_train", "before_layout"), "--layouts"]),
        ("check --xla-ties", ["check", c("conv2d_nchw", "after_layout"), "--layouts", "--xla-ties"]),
        ("check parse error", ["check", str(tmp / "bad_parse.hlo")]),
        ("check verify errors", ["check", str(tmp / "bad_verify.hlo")]),
        ("normalize", ["normalize", c("reduce_2d", "after_layout")]),
        ("normalize passes", ["normalize", c("reduce_2d", "after_layout"), "-p",
                              "normalize-layouts,reductions,grouping", "--verify", "--short"]),
        ("normalize -o", ["normalize", c("reduce_2d", "after_layout"), "-o", "{out}/n.hlo"]),
        ("normalize variadic", ["normalize", variadic]),
        ("normalize unknown pass", ["normalize", c("reduce_2d", "after_layout"), "-p", "nope"]),
        ("normalize parse error", ["normalize", str(tmp / "bad_parse.hlo")]),
        ("verify", ["verify", c("mlp_train", "pre"), c("mlp_train", "after_layout"),
                    "--seed", "3", "--trials", "2"]),
        ("verify --json", ["verify", c("mlp_fwd_tiny", "pre"), c("mlp_fwd_tiny", "after_layout"),
                           "--json"]),
        ("verify violations", ["verify", str(tmp / "tie_good.hlo"), str(tmp / "tie_bad.hlo")]),
        ("verify incomparable", ["verify", c("mlp_fwd_tiny", "pre"), c("reduce_2d", "pre")]),
        ("verify parse error", ["verify", c("mlp_fwd_tiny", "pre"), str(tmp / "bad_parse.hlo")]),
        ("score", ["score", c("attention_fwd", "after_layout"), "-t", "tpu"]),
        ("score --json", ["score", c("attention_fwd", "after_layout"), "-t", "gpu", "--json"]),
        ("score unknown target", ["score", c("attention_fwd", "after_layout"), "-t", "nope"]),
        ("assign", ["assign", str(REPO / "examples" / "attention_fwd.hlo"), "-t", "tpu", "-o",
                    "{out}/a.hlo", "--report", "{out}/a.json"]),
        ("assign stdout gpu", ["assign", c("reduce_2d", "before_layout"), "-t", "gpu"]),
        ("assign auto, passes", ["assign", c("mlp_fwd_tiny", "pre"), "-t", "cpu", "--entry-layout",
                                 "auto", "--passes", "normalize-layouts", "--emit-bitcasts"]),
        ("assign --normalize", ["assign", c("reduce_2d", "before_layout"), "-t", "cpu",
                                "--normalize"]),
        ("assign bad entry layout", ["assign", c("reduce_2d", "pre"), "--entry-layout", "x"]),
        ("assign bitcast", ["assign", str(tmp / "bitcast.hlo")]),
        ("assign parse error", ["assign", str(tmp / "bad_parse.hlo")]),
    ]
    return out


_WALL = [
    (re.compile(r"(time_ms\s*│\s*)[0-9.]+"), r"\1T"),
]


def _clean(text: str, tmp: Path, out: Path) -> str:
    text = text.replace(str(out), "{out}").replace(str(tmp), "{tmp}")
    for pattern, repl in _WALL:
        text = pattern.sub(repl, text)
    return text


def _report(path: Path) -> object:
    data = json.loads(path.read_text())
    data.pop("timings_ms", None)
    return data


def run_case(tree: Path, argv: list[str], tmp: Path, label: str) -> dict:
    out = tmp / f"out-{label}"
    out.mkdir(exist_ok=True)
    args = [a.replace("{out}", str(out)) for a in argv]
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", *args],
                          cwd=tree, env=env, capture_output=True, text=True, check=False)
    written = {}
    for path in sorted(out.iterdir()):
        written[path.name] = _report(path) if path.suffix == ".json" else path.read_text()
        path.unlink()
    return {"exit": proc.returncode, "stdout": _clean(proc.stdout, tmp, out),
            "stderr": _clean(proc.stderr, tmp, out), "files": written}


def _print_file_differences(old: dict, new: dict) -> None:
    """Each written file that differs; for JSON reports, the keys whose values differ."""
    for name in sorted(set(old) | set(new)):
        before, now = old.get(name), new.get(name)
        if before == now:
            continue
        if isinstance(before, dict) and isinstance(now, dict):
            for key in sorted(set(before) | set(now)):
                if before.get(key) != now.get(key):
                    print(f"  {name}[{key}] before: {str(before.get(key))[:300]}")
                    print(f"  {name}[{key}] now:    {str(now.get(key))[:300]}")
        else:
            print(f"  {name} differs")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = tmp / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO,
                       check=True, capture_output=True)
        same = total = 0
        try:
            for name, argv in cases(tmp):
                if args.only not in name:
                    continue
                total += 1
                old, new = run_case(base, argv, tmp, "old"), run_case(REPO, argv, tmp, "new")
                if old == new:
                    same += 1
                    print(f"same     {name} (exit {new['exit']})", flush=True)
                    continue
                print(f"DIFFERS  {name}", flush=True)
                for key in ("exit", "stdout", "stderr"):
                    if old[key] != new[key]:
                        print(f"  {key} before: {str(old[key])[:1500]!r}")
                        print(f"  {key} now:    {str(new[key])[:1500]!r}")
                _print_file_differences(old["files"], new["files"])
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO,
                           check=False, capture_output=True)
        print(f"{same} of {total} cases the same")


if __name__ == "__main__":
    main()
