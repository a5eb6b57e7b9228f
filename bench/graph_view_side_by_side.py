"""``POST /v1/graph-view`` of one corpus module served by an earlier commit and by the working
tree, alternately in one run, so both see the same machine load (ratios, not absolute times).

    python3 bench/graph_view_side_by_side.py --base 6e1ad3c --module gpt_train_12l --rounds 3

The earlier commit is checked out with ``git worktree`` into a temporary folder (removed
afterwards). Each round starts a fresh process per tree that builds the app and sends the
module through Starlette's test client (the whole route in process: body validation, parse,
verify, graph layout, JSON encoding; no network): one request to warm up, one timed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))

_RUN = r"""
import json, sys, time
from starlette.testclient import TestClient
from service.app import create_app
from service.settings import Settings
text = open(sys.argv[1]).read()
client = TestClient(create_app(Settings(workers=1, cache_path=None, max_body_bytes=64 << 20)))
client.post("/v1/graph-view", json={"hlo": text}).raise_for_status()
began = time.perf_counter()
answer = client.post("/v1/graph-view", json={"hlo": text})
elapsed = time.perf_counter() - began
answer.raise_for_status()
print(json.dumps({"ms": round(elapsed * 1000, 1), "bytes": len(answer.content),
                  "nodes": len(answer.json()["nodes"]["name"])}))
"""


def _run(tree: Path, module: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", _RUN, str(module)], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--module", default="gpt_train_12l")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    corpus = SHARED / "corpus"
    source = next(p for p in (corpus / f"{args.module}.before_layout.hlo.gz",
                              corpus / f"{args.module}.before_layout.hlo") if p.exists())
    with tempfile.TemporaryDirectory(prefix="graph-view-sbs-") as tmp:
        module = Path(tmp) / "module.hlo"
        module.write_text(gzip.open(source, "rt").read() if source.suffix == ".gz"
                          else source.read_text())
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO,
                       check=True, capture_output=True)
        try:
            rows: dict[str, list[dict]] = {"base": [], "head": []}
            for _ in range(args.rounds):
                for name, tree in (("base", base), ("head", REPO)):
                    rows[name].append(_run(tree, module))
                    rows[name][-1]["load_1min"] = round(os.getloadavg()[0], 2)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO,
                           check=False, capture_output=True)
    medians = {k: statistics.median(r["ms"] for r in v) for k, v in rows.items()}
    print(json.dumps({"module": args.module, "base": args.base, "rounds": rows,
                      "median_ms": medians,
                      "ratio_head_over_base": round(medians["head"] / medians["base"], 3)},
                     indent=1))


if __name__ == "__main__":
    main()
