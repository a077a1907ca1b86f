"""The invented repository of the bundled sample: ``orderly``, a small order-tracking web service.

What it holds: the text of every file the agent of ``data/make_sample.py`` reads, greps and edits
(``SERVER_PY``, ``CONFIG_PY``, ``DEV_YAML``, ...), the files it writes during the session
(``TLS_PY``, ``HEALTH_PY``, ``TEST_HEALTH_PY``), the repository as it starts (``REPO``: path ->
text; ``OTHER_FILES``: paths that only show up in a directory listing) and :class:`Repo`, the
in-memory working copy whose reads, greps, edits and diffs stay consistent with each other.

Simplified on purpose: every word, path and number is invented here (nothing is copied from any
transcript); nothing is written to disk. The sample is what chapters 02 to 08 measure on.
"""

from __future__ import annotations

import difflib

SERVER_PY = '''"""HTTP entry point of the orderly API."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from aiohttp import web

from app import __version__
from app.config import Settings, load_settings
from app.orders import routes as order_routes
from app.middleware import (
    access_log_middleware,
    error_middleware,
    request_id_middleware,
)

log = logging.getLogger("orderly.server")

# Middlewares run in this order for every request.
MIDDLEWARES = [
    request_id_middleware,
    access_log_middleware,
    error_middleware,
]


def _env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


HOST = os.environ.get("ORDERLY_HOST", "0.0.0.0")
# The port the service listens on. Staging and production put a load
# balancer in front of it; see docs/deploy.md.
PORT = int(os.environ.get("ORDERLY_PORT", "8080"))
DEBUG = _env_flag("ORDERLY_DEBUG")


def build_app(settings: Settings) -> web.Application:
    """The aiohttp application with routes, middlewares and the database pool."""
    app = web.Application(middlewares=MIDDLEWARES)
    app["settings"] = settings
    app.add_routes(order_routes)
    app.on_startup.append(_open_db)
    app.on_cleanup.append(_close_db)
    return app


async def _open_db(app: web.Application) -> None:
    from app.db import Database

    app["db"] = await Database.connect(app["settings"].database_url)


async def _close_db(app: web.Application) -> None:
    await app["db"].close()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orderly")
    parser.add_argument("--config", default="config/dev.yaml")
    parser.add_argument("--port", type=int, default=PORT)
    return parser.parse_args(argv)


def run(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    settings = load_settings(args.config)
    logging.basicConfig(level=logging.DEBUG if DEBUG else logging.INFO)
    log.info("orderly %s listening on %s:%d", __version__, HOST, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    web.run_app(build_app(settings), host=HOST, port=args.port, access_log=None)


if __name__ == "__main__":
    run()
'''

CONFIG_PY = '''"""Settings: read config/*.yaml, then let ORDERLY_* environment variables override them."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import yaml


@dataclass(frozen=True)
class Settings:
    database_url: str
    port: int = 8080
    tls_cert: str | None = None
    tls_key: str | None = None
    refund_window_days: int = 30
    ratelimit_redis_url: str | None = None


def load_settings(path: str) -> Settings:
    """``load_settings("config/dev.yaml")`` -> Settings, environment first, then the file."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    flat = {
        "database_url": raw.get("database", {}).get("url"),
        "port": raw.get("server", {}).get("port", 8080),
        "tls_cert": raw.get("tls", {}).get("cert"),
        "tls_key": raw.get("tls", {}).get("key"),
        "refund_window_days": raw.get("refunds", {}).get("window_days", 30),
        "ratelimit_redis_url": raw.get("ratelimit", {}).get("redis_url"),
    }
    for f in fields(Settings):
        env = os.environ.get(f"ORDERLY_{f.name.upper()}")
        if env is not None:
            flat[f.name] = int(env) if f.type == "int" else env
    return Settings(**flat)
'''

DEV_YAML = '''# Local development settings. Safe to edit.
server:
  host: 127.0.0.1
  port: 8080
database:
  url: postgresql://orderly:orderly@localhost:5432/orderly_dev
refunds:
  window_days: 30
ratelimit:
  redis_url: redis://localhost:6379/3
logging:
  level: debug
'''

PROD_YAML = '''# Production settings. Owned by the ops team: change through an ops ticket only.
server:
  host: 0.0.0.0
  port: 8080
database:
  url: ${ORDERLY_DATABASE_URL}
refunds:
  window_days: 30
ratelimit:
  redis_url: ${ORDERLY_REDIS_URL}
'''

RUN_DEV_SH = '''#!/bin/sh
# Start orderly locally with the dev config.
export ORDERLY_PORT=${ORDERLY_PORT:-8080}
export ORDERLY_DEBUG=1
exec python -m app.server --config config/dev.yaml "$@"
'''

DOCKERFILE = '''FROM python:3.11-slim AS base
WORKDIR /srv/orderly
COPY pyproject.toml ./
RUN pip install --no-cache-dir .
COPY src/ ./src/
COPY config/ ./config/

FROM base AS runtime
RUN useradd --system orderly
USER orderly
ENV PYTHONUNBUFFERED=1
HEALTHCHECK CMD python -c "import urllib.request as u; u.urlopen('http://localhost:8080/v1/orders?limit=1')"

# The load balancer forwards to this port.
EXPOSE 8080
CMD ["python", "-m", "app.server", "--config", "config/prod.yaml"]
'''

README_MD = '''# orderly

A small order-tracking HTTP API: create orders, look them up, refund them. Python 3.11, aiohttp,
PostgreSQL. Used by the shop front end and by finance's nightly reconciliation job.

## Run it

    pip install -e .[dev]
    sh scripts/run_dev.sh          # http://localhost:8080

The dev server reads `config/dev.yaml`; any `ORDERLY_*` environment variable overrides the file
(`ORDERLY_PORT`, `ORDERLY_DEBUG`, `ORDERLY_DATABASE_URL`, ...).

## API

| method | path | what |
|---|---|---|
| GET | /v1/orders?limit=N | newest orders first |
| GET | /v1/orders/{id} | one order |
| POST | /v1/orders | create an order |
| POST | /v1/orders/{id}/refunds | refund part of an order |

Amounts are integer cents (`total_cents`). Clients depend on the field names: add fields, never
rename or remove them (see docs/api-compat.md).

## Tests

    make ci          # lint, unit tests, integration tests against a local server
    make ci-full     # also runs the contract tests against the shared staging database

## Deployment

See docs/deploy.md. Staging and production run behind a load balancer on port 8080 today.

## Layout

    src/app/server.py      entry point, app factory
    src/app/orders.py      order and refund handlers
    src/app/config.py      settings loader
    src/app/db.py          database pool
    config/                dev.yaml (yours), prod.yaml (ops only)
    tests/                 unit tests; tests/integration/ starts a real server
'''

README_ZH = '''# orderly 订单服务

orderly 是一个小型的订单跟踪 HTTP API，使用 aiohttp 编写，负责创建订单、查询订单状态以及处理退款。
前端商城和财务部门的夜间对账任务都依赖这个服务。

## 快速开始

1. 安装依赖：`pip install -e .[dev]`
2. 生成本地开发证书：`sh certs/make_dev_cert.sh`
3. 启动服务：`sh scripts/run_dev.sh`
4. 在浏览器中打开 http://localhost:8080/v1/orders 查看接口

## 配置

配置文件位于 `config/` 目录：

- `config/dev.yaml`：本地开发配置，可以随意修改；
- `config/prod.yaml`：生产配置，由运维团队维护，请勿直接修改。

环境变量会覆盖配置文件中的同名字段，例如 `ORDERLY_PORT`、`ORDERLY_DEBUG`。

## 安全要求

- 生产环境只允许 TLS 1.3，不接受更低版本的协议。
- 证书和私钥不能提交到仓库，`certs/` 目录下只保留生成脚本和说明。
- 日志中不得输出完整的银行卡号，只保留后四位。

## 接口约定

所有接口都以 `/v1` 开头，响应体统一使用 JSON。金额字段以"分"为单位的整数表示，
例如 `total_cents: 1999` 表示 19.99 元。新增字段必须向后兼容：可以增加字段，不能删除或重命名已有字段。

## 测试

运行 `make ci` 会执行代码检查、单元测试和集成测试，集成测试会在本地 8080 端口启动一个临时服务。
`make ci-full` 还会连接共享的预发布数据库，耗时较长，请只在 CI 中运行。

## 常见问题

**问：为什么退款金额偶尔差一分钱？**

答：这是已知问题（见 issue #214）。退款计算使用了浮点数，在某些金额上四舍五入的结果不稳定。
'''

DEPLOY_MD = '''# Deploying orderly

Staging: `staging.orderly.example.internal`, production: `orderly.example.internal`.
Both run two containers behind the shared load balancer.

1. Merge to `main`; CI builds the image `orderly:<git sha>`.
2. `make deploy-staging` rolls the staging containers one at a time.
3. Check `/v1/orders?limit=1` answers 200 on staging.
4. Ops promotes the image to production after the daily change review.

The load balancer forwards HTTPS traffic to the containers on port 8080. TLS currently ends at the
load balancer; the containers speak plain HTTP.

Rolling back: `make rollback-staging REV=<previous sha>`.
'''

FINANCE_MD = '''# Money rules (from finance, 2025-06)

- All amounts are stored and sent as integer cents.
- Refunds round half up to the cent: 50.065 becomes 50.07, never 50.06.
- A partial refund may not exceed the amount paid minus earlier refunds.
- Currency conversion happens only in the reconciliation job, never in the API.
'''

ORDERS_PY = '''"""Order handlers: create, fetch, list and refund orders (/v1/orders)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone

from aiohttp import web

from app.db import Database, NotFound

log = logging.getLogger("orderly.orders")
routes = web.RouteTableDef()

# Refund rates by reason; finance reviews this table every quarter.
REFUND_RATES = {
    "damaged": 1.0,
    "late": 0.1,
    "wrong_item": 1.0,
    "changed_mind": 0.85,
}


@dataclass
class LineItem:
    sku: str
    quantity: int
    unit_price: float

    @property
    def subtotal(self) -> float:
        return self.quantity * self.unit_price


@dataclass
class Order:
    id: int
    customer_id: int
    items: list[LineItem]
    status: str = "open"
    currency: str = "EUR"
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    refunds: list[float] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(item.subtotal for item in self.items)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "customer_id": self.customer_id,
            "status": self.status,
            "currency": self.currency,
            "items": [
                {"sku": i.sku, "quantity": i.quantity, "unit_price_cents": int(round(i.unit_price * 100))}
                for i in self.items
            ],
            "total_cents": int(round(self.total * 100)),
            "refunded_cents": int(round(sum(self.refunds) * 100)),
            "created_at": self.created_at.isoformat(),
        }


@routes.get("/v1/orders/{order_id}")
async def get_order(request: web.Request) -> web.Response:
    db: Database = request.app["db"]
    try:
        order = await db.fetch_order(int(request.match_info["order_id"]))
    except NotFound:
        raise web.HTTPNotFound(text="order not found")
    return web.json_response(order.to_json())


@routes.get("/v1/orders")
async def list_orders(request: web.Request) -> web.Response:
    db: Database = request.app["db"]
    limit = min(int(request.query.get("limit", "20")), 100)
    orders = await db.recent_orders(limit)
    return web.json_response({"orders": [o.to_json() for o in orders]})


def compute_refund(order: Order, reason: str) -> float:
    """The amount to refund for ``reason``, rounded to the cent."""
    if reason not in REFUND_RATES:
        raise ValueError(f"unknown refund reason {reason!r}")
    rate = REFUND_RATES[reason]
    already = sum(order.refunds)
    refund = round(order.total * rate, 2)
    return min(refund, round(order.total - already, 2))


@routes.post("/v1/orders/{order_id}/refunds")
async def refund_order(request: web.Request) -> web.Response:
    db: Database = request.app["db"]
    body = await request.json()
    order = await db.fetch_order(int(request.match_info["order_id"]))
    amount = compute_refund(order, body["reason"])
    if amount <= 0:
        raise web.HTTPConflict(text="nothing left to refund")
    order.refunds.append(amount)
    await db.save_refund(order.id, amount, body["reason"])
    log.info("refunded %.2f on order %d (%s)", amount, order.id, body["reason"])
    return web.json_response({"order_id": order.id, "refund_cents": int(round(amount * 100))})
'''

TEST_SERVER_PY = '''from app.server import PORT, parse_args


def test_default_port():
    assert PORT == 8080


def test_port_flag_overrides_default():
    assert parse_args(["--port", "9000"]).port == 9000


def test_config_flag():
    assert parse_args(["--config", "x.yaml"]).config == "x.yaml"


def test_default_config_is_dev():
    assert parse_args([]).config == "config/dev.yaml"


def test_debug_flag_defaults_off(monkeypatch):
    monkeypatch.delenv("ORDERLY_DEBUG", raising=False)
    from app import server
    assert server._env_flag("ORDERLY_DEBUG") is False
'''

TEST_ORDERS_PY = '''import random
from decimal import ROUND_HALF_UP, Decimal

import pytest

from app.orders import LineItem, Order, compute_refund


def make_order(*prices):
    return Order(id=1, customer_id=7, items=[LineItem(f"sku-{i}", 1, p) for i, p in enumerate(prices)])


def test_full_refund_for_damaged_goods():
    assert compute_refund(make_order(19.99, 5.00), "damaged") == 24.99


def test_late_delivery_refunds_ten_percent():
    assert compute_refund(make_order(40.00), "late") == 4.00


def test_unknown_reason_is_refused():
    with pytest.raises(ValueError):
        compute_refund(make_order(1.00), "bored")


def test_refund_never_exceeds_what_is_left():
    order = make_order(10.00)
    order.refunds.append(9.50)
    assert compute_refund(order, "damaged") == 0.50


def test_refund_rounding():
    # Finance rounds half up to the cent (docs/finance-rules.md).
    for _ in range(20):
        cents = random.randint(1, 100_000)
        order = make_order(cents / 100)
        expected = (Decimal(cents) / 100 * Decimal("0.1")).quantize(Decimal("0.01"), ROUND_HALF_UP)
        assert compute_refund(order, "late") == float(expected)


def test_changed_mind_keeps_fifteen_percent():
    assert compute_refund(make_order(100.00), "changed_mind") == 85.00
'''

TEST_TLS_CLIENT_PY = '''"""Integration: talk to a real server over TLS on the configured port."""

import ssl

import aiohttp
import pytest

from tests.integration.harness import running_server

pytestmark = pytest.mark.integration


@pytest.fixture
def client_ssl():
    return ssl.create_default_context()


async def test_get_order_over_tls(client_ssl):
    async with running_server(tls=True) as base:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/v1/orders/1", ssl=client_ssl) as resp:
                assert resp.status == 200


async def test_list_orders_over_tls(client_ssl):
    async with running_server(tls=True) as base:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/v1/orders?limit=2", ssl=client_ssl) as resp:
                body = await resp.json()
                assert len(body["orders"]) <= 2


async def test_plain_http_is_refused(client_ssl):
    async with running_server(tls=True) as base:
        plain = base.replace("https://", "http://")
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientError):
                await http.get(f"{plain}/v1/orders/1")
'''

CERTS_README = '''Development certificates live here but are never committed (see .gitignore).
Create them with:  sh certs/make_dev_cert.sh
This writes certs/dev.pem and certs/dev.key (self-signed, CN=localhost, valid one year).
'''

MAKE_DEV_CERT = '''#!/bin/sh
set -e
cd "$(dirname "$0")"
openssl req -x509 -newkey rsa:2048 -nodes -days 365 \\
  -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \\
  -keyout dev.key -out dev.pem
echo "wrote certs/dev.pem and certs/dev.key"
'''

INIT_PY = '''"""orderly: a small order-tracking API."""

__version__ = "1.8.2"
'''

PYPROJECT = '''[project]
name = "orderly"
version = "1.8.2"
requires-python = ">=3.11"
dependencies = [
  "aiohttp>=3.10,<4",
  "asyncpg>=0.29",
  "pyyaml>=6",
  "cryptography>=42",
]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-asyncio>=0.24", "ruff>=0.6"]
'''

TLS_PY = '''"""TLS for the orderly server: an SSL context from a certificate and key on disk."""

from __future__ import annotations

import os
import ssl
import sys
from pathlib import Path


class CertificateError(RuntimeError):
    """A certificate or key is missing or unreadable (error code E4057)."""


def cert_paths(settings_cert: str | None, settings_key: str | None) -> tuple[Path, Path]:
    """Dev: certs/dev.pem and certs/dev.key; elsewhere ORDERLY_TLS_CERT / ORDERLY_TLS_KEY."""
    cert = os.environ.get("ORDERLY_TLS_CERT") or settings_cert or "certs/dev.pem"
    key = os.environ.get("ORDERLY_TLS_KEY") or settings_key or "certs/dev.key"
    return Path(cert), Path(key)


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server-side context that accepts TLS 1.3 only (docs: production allows nothing older)."""
    for path in (cert, key):
        if not path.is_file():
            raise CertificateError(f"E4057 certificate file not found: {path}")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(certfile=str(cert), keyfile=str(key))
    return ctx


def _check() -> int:
    cert, key = cert_paths(None, None)
    try:
        server_context(cert, key)
    except CertificateError as exc:
        print(f"error {exc}", file=sys.stderr)
        return 1
    print(f"ok: {cert} loads, TLS 1.3 minimum")
    return 0


if __name__ == "__main__" and "--check" in sys.argv:
    sys.exit(_check())
'''

HEALTH_PY = '''"""GET /healthz: a cheap liveness answer for the load balancer (no database call)."""

from __future__ import annotations

from aiohttp import web

from app import __version__

routes = web.RouteTableDef()


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "version": __version__})
'''

TEST_HEALTH_PY = '''from aiohttp.test_utils import TestClient, TestServer
from aiohttp import web

from app.health import routes


async def test_healthz_answers_ok():
    app = web.Application()
    app.add_routes(routes)
    async with TestClient(TestServer(app)) as client:
        resp = await client.get("/healthz")
        assert resp.status == 200
        body = await resp.json()
        assert body["status"] == "ok"
        assert body["version"]
'''

REPO: dict[str, str] = {
    "README.md": README_MD, "Makefile": "ci:\n\truff check src tests\n\tpytest -q -m 'not contract'\n",
    "pyproject.toml": PYPROJECT, "certs/README.md": CERTS_README, "certs/make_dev_cert.sh": MAKE_DEV_CERT,
    "config/dev.yaml": DEV_YAML, "config/prod.yaml": PROD_YAML, "docker/Dockerfile": DOCKERFILE,
    "docs/README.zh.md": README_ZH, "docs/deploy.md": DEPLOY_MD, "docs/finance-rules.md": FINANCE_MD,
    "scripts/run_dev.sh": RUN_DEV_SH, "src/app/__init__.py": INIT_PY, "src/app/config.py": CONFIG_PY,
    "src/app/orders.py": ORDERS_PY, "src/app/server.py": SERVER_PY,
    "tests/integration/test_tls_client.py": TEST_TLS_CLIENT_PY, "tests/test_orders.py": TEST_ORDERS_PY,
    "tests/test_server.py": TEST_SERVER_PY,
}
OTHER_FILES = ["src/app/db.py", "src/app/middleware.py", "tests/conftest.py", "tests/integration/harness.py",
               "tests/fixtures/refund_receipt.pdf", "docs/api-compat.md", ".gitignore",
               ".github/workflows/ci.yml"]


class Repo:
    """The repository as a dict (path -> text): reads, greps and edits stay consistent."""

    def __init__(self) -> None:
        self.files = dict(REPO)

    def read(self, path: str, offset: int = 1, limit: int | None = None) -> str:
        lines = self.files[path].splitlines()
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(offset, end + 1))

    def line_of(self, path: str, needle: str) -> int:
        return next(n for n, line in enumerate(self.files[path].splitlines(), 1) if needle in line)

    def grep(self, needle: str, prefix: str = "") -> str:
        hits = [f"{p}:{n}:{line}" for p in sorted(self.files) if p.startswith(prefix)
                for n, line in enumerate(self.files[p].splitlines(), 1) if needle in line]
        return "\n".join(hits) if hits else "(no matches)"

    def edit(self, path: str, old: str, new: str) -> str:
        text = self.files[path]
        assert text.count(old) == 1, (path, old)
        line = text[: text.index(old)].count("\n") + 1
        self.files[path] = text.replace(old, new)
        end = line + new.count("\n") + 2
        snippet = self.read(path, max(1, line - 2), end - max(1, line - 2) + 1)
        return f"Edited {path}: replaced 1 occurrence (line {line}). The file now reads:\n{snippet}"

    def write(self, path: str, content: str) -> str:
        existed = path in self.files
        self.files[path] = content
        return f"{'Overwrote' if existed else 'Created'} {path} ({len(content.encode())} bytes)."

    def diff(self, *paths: str) -> str:
        """``git diff`` of the given paths against the files as they were at the start."""
        out: list[str] = []
        for path in paths:
            before = REPO.get(path, "").splitlines(keepends=True)
            after = self.files[path].splitlines(keepends=True)
            head = [f"diff --git a/{path} b/{path}\n"] + (["new file mode 100644\n"] if path not in REPO else [])
            out += head + list(difflib.unified_diff(before, after, "/dev/null" if path not in REPO else f"a/{path}",
                                                    f"b/{path}", n=2))
        return "".join(out).rstrip("\n")

    def tree(self, prefix: str = "") -> str:
        paths = sorted(p for p in list(self.files) + OTHER_FILES if p.startswith(prefix))
        out, seen = [], set()
        for p in paths:
            parts = p[len(prefix):].split("/")
            for depth in range(len(parts)):
                node = "/".join(parts[: depth + 1])
                if node not in seen:
                    seen.add(node)
                    out.append("  " * depth + parts[depth] + ("/" if depth < len(parts) - 1 else ""))
        return (prefix or "./") + "\n" + "\n".join("  " + line for line in out)
