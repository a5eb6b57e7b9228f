"""``verify``: prove a rewritten module computes what the original computes.

Both modules run through the reference interpreter on the same random inputs;
the rewritten module's layouts are checked by the layout verifier. Exit codes:
0 equivalent and the layouts verify; 1 a differing output element (the first
one is reported) or layout violations; 2 bad input (unreadable file, parse
error, modules that cannot be compared or executed).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from service.cli.source import outcome_of, read_source, source_name
from service.options import VerifyOptions
from service.pipeline import VerifyRequest


def _summary(report: dict) -> list[str]:
    lines = []
    if report["equivalent"]:
        how = "bit for bit" if report["exact"] else (
            f"within the rounding bound (worst error {report['worst_ratio']:.3g} of the allowed)"
        )
        lines.append(f"equivalent on {report['trials']} random input set(s), seed "
                     f"{report['seed']}: {how}")
        lines.extend(f"  note: {n}" for n in report["notes"] if "not bit for bit" not in n)
    else:
        lines.append(f"NOT equivalent: {report['first_difference']['summary']}")
    if report["violations"]:
        lines.append(f"layouts: {len(report['violations'])} violation(s)")
        lines.extend(f"  {v}" for v in report["violations"])
    else:
        lines.append("layouts: verified")
    return lines


def _xla_summary(checked: dict) -> list[str]:
    if not checked["ran"]:
        return [f"XLA:CPU: cannot run: {checked['refusal']}"]
    if checked["outputs_match"]:
        how = "bit for bit" if checked["exact"] else (
            f"within tolerance (max normwise error {checked['max_error']:.3g})")
        return [f"XLA:CPU: the rewritten module, run with its layouts, matches XLA's execution "
                f"of the original: {how}"]
    return [f"XLA:CPU: NOT equivalent to XLA's execution of the original: {checked['difference']}"]


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify(
        original: Path = typer.Argument(..., help="The module before the rewrite (.hlo or .hlo.gz)."),
        rewritten: Path = typer.Argument(..., help="The rewritten module."),
        seed: int = typer.Option(0, "--seed", help="Seed of the random inputs."),
        trials: int = typer.Option(1, "--trials", min=1, help="Number of random input sets."),
        exact: bool = typer.Option(False, "--exact", help="Require bit-identical floats."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        xla: bool = typer.Option(
            False, "--xla",
            help="Also run REWRITTEN in XLA:CPU with exactly its layouts and compare it with "
                 "XLA's execution of ORIGINAL (needs the xla extra)."),
        memory_limit_mb: int = typer.Option(
            4096, "--memory-limit-mb", min=1,
            help="Refuse modules whose interpreter buffers may exceed this many MiB (checked "
                 "before anything is allocated)."),
    ) -> None:
        """Run ORIGINAL and REWRITTEN on the same random inputs and compare every output.

        \b
        Each element of REWRITTEN's output (R) is judged against
        the original run in f64 (S), three f64 runs with rounding
        noise of the original's precision (N1..N3) and the
        original's own output (O):
        - identical bits (NaN = NaN): accepted
        - float: |R-S| <= max(2|O-S|, 8 max|Nj-S|) + 8u|S| + tiny
          (u, tiny: unit roundoff, smallest normal of its type)
        - S, O or an Nj NaN/inf: not judged (counted unchecked)
        - integer: must equal O unless O, S, Nj disagree on it
        - where R and O differ, REWRITTEN run in f64 (SR) must
          match S: |SR-S| <= 8 max(max|Ej-S|, m|S|) + 8 2^-53 |S|
          (Ej: S with f64 rounding noise, and the original
          types' rounding on constants and custom-calls;
          m: the output's median relative noise)
        Float inputs reaching log/sqrt/rsqrt/power: in [0.05, 0.95].
        Layout violations of REWRITTEN also fail verification.
        """
        texts = {"original": (original, read_source(original)),
                 "rewritten": (rewritten, read_source(rewritten))}
        options = VerifyOptions(seed=seed, trials=trials, memory_limit_mb=memory_limit_mb,
                                exact=exact, xla=xla)
        request = VerifyRequest(texts["original"][1], texts["rewritten"][1], options,
                                source_name(original), source_name(rewritten))
        data = outcome_of(request, {**texts, None: texts["rewritten"]}).data
        report = {k: v for k, v in data.items() if k not in ("original", "rewritten")}
        checked = report.get("xla")
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            for line in _summary(report) + (_xla_summary(checked) if checked else []):
                typer.echo(line)
        if checked is not None and not checked["ran"]:
            raise typer.Exit(code=2)
        xla_ok = checked is None or checked["outputs_match"]
        raise typer.Exit(code=0 if report["ok"] and xla_ok else 1)
