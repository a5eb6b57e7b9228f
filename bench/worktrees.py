"""Earlier commits checked out beside the working tree, for benchmarks run side by side.

``with checked_out(["8dcf3e0"]) as trees:`` gives ``[("8dcf3e0", path), ("new", REPO)]``: each
commit in a detached ``git worktree`` under a temporary folder, removed when the block ends,
then the working tree itself.
"""

from __future__ import annotations

import subprocess
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
