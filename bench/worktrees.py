"""Earlier commits checked out beside the working tree, for benchmarks run side by side.

``with checked_out(["8dcf3e0"]) as trees:`` gives ``[("8dcf3e0", path), ("new", REPO)]``: each
commit in a detached ``git worktree`` under a temporary folder, removed when the block ends,
then the working tree itself. ``run_in(tree, script, *args)`` runs a script against one of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def checked_out(commits: Sequence[str]) -> Iterator[list[tuple[str, Path]]]:
    with tempfile.TemporaryDirectory() as tmp:
        added: list[Path] = []
        try:
            for commit in commits:
                tree = Path(tmp) / commit
                subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit],
                               cwd=REPO, check=True, capture_output=True)
                added.append(tree)
            yield [*zip(commits, added), ("new", REPO)]
        finally:
            for tree in added:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)],
                               cwd=REPO, check=False, capture_output=True)


def run_in(tree: Path, script: str, *args: str) -> dict:
    """Run ``script`` (Python source) in a fresh process importing ``tree``'s code; its last
    line of output is a JSON object, returned with the 1-minute load average added."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", script, *args],
                          cwd=tree, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)}: {proc.stderr.strip()[-2000:]}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["load"] = round(os.getloadavg()[0], 2)
    return row
