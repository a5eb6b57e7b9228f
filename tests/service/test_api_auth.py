"""Optional bearer-token authentication, and the result cache surviving a restart."""

from __future__ import annotations

from pathlib import Path

import httpx
from test_api_ops import running_server

from service.api.schemas import EXAMPLE_HLO
from service.app import create_app
from service.settings import Settings


def test_bearer_token_guards_v1_routes_not_health(tmp_path: Path) -> None:
    settings = Settings(workers=1, cache_path=None, auth_token="s3cret")
    with running_server(create_app(settings)) as base, httpx.Client(base_url=base) as c:
        body = {"hlo": EXAMPLE_HLO}
        r = c.post("/v1/check", json=body)
        assert r.status_code == 401 and r.json()["type"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        wrong = c.post("/v1/check", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert c.get("/v1/targets").status_code == 401
        ok = c.post("/v1/check", json=body, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200, ok.text
        assert c.get("/healthz").status_code == 200


def test_cached_result_survives_a_server_restart(tmp_path: Path) -> None:
    settings = Settings(workers=1, cache_path=tmp_path / "cache.sqlite")
    body = {"hlo": EXAMPLE_HLO.replace("add_one", "restart_me")}
    with running_server(create_app(settings)) as base, httpx.Client(base_url=base) as c:
        first = c.post("/v1/format", json=body)
        assert first.headers["x-cache"] == "miss"
    with running_server(create_app(settings)) as base, httpx.Client(base_url=base) as c:
        again = c.post("/v1/format", json=body)
        assert again.headers["x-cache"] == "hit"
        assert again.json() == first.json()
