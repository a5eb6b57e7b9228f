"""``calibrate``: fit the cost model's coefficients to times measured in XLA and write a target.

Exit codes: 0 written; 2 jax missing, a backend jax cannot reach, or a microbenchmark that
does not run (the reason is printed).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hlo.target import TargetError, load_target, read_target_file


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate_command(
        platform: str = typer.Option("cpu", "--platform", help="jax backend to measure on."),
        out: Path | None = typer.Option(None, "-o", "--out", help="Write the target TOML here."),
        reps: int = typer.Option(7, "--reps", min=1, help="Timed rounds per microbenchmark."),
        quick: bool = typer.Option(False, "--quick", help="f32 and the two smaller sizes only."),
        as_json: bool = typer.Option(False, "--json", help="Print coefficients and samples."),
        name: str | None = typer.Option(None, "--name", help="The target's name (default: "
                                        "the platform's)."),
        sources: list[Path] = typer.Option(
            [], "--from", help="Fit the measurements a calibrate --json run wrote (on this "
                               "or another machine) instead of measuring; given again, each "
                               "microbenchmark's median over the runs."),
    ) -> None:
        """Run the microbenchmarks in XLA, fit the coefficients, write the target file."""
        from service.calibration.fit import FitError
        from service.calibration.run import calibrate, from_json, merged, to_json
        from service.calibration.target_file import target_toml
        from service.xla.errors import XlaError

        try:
            if sources:
                result = from_json(merged([json.loads(s.read_text()) for s in sources]))
            else:
                result = calibrate(platform=platform, reps=reps, quick=quick,
                                   progress=lambda name: typer.echo(f"measuring {name}", err=True))
        except XlaError as err:
            typer.echo(f"error: {err.message}", err=True)
            raise typer.Exit(code=2) from None
        except (OSError, UnicodeDecodeError, ValueError) as err:  # FitError is a ValueError
            what = "the measurements do not fit" if isinstance(err, FitError) else "cannot read"
            where = ", ".join(str(s) for s in sources) or "calibrate"
            typer.echo(f"{where}: error: {what}: {err}", err=True)
            raise typer.Exit(code=2) from None
        text = target_toml(result, name)
        if out is not None:
            out.write_text(text)
            try:
                load_target(read_target_file(out))
            except TargetError as err:  # a defect: the file we wrote must load
                typer.echo(f"{out}: error: {err.message}", err=True)
                raise typer.Exit(code=2) from None
        if as_json:
            typer.echo(json.dumps(to_json(result), indent=1))
        elif out is None:
            typer.echo(text, nl=False)
