"""agent-memory: serve, create-table, reencrypt, reembed, export, import, dynamodb-local."""

import argparse
import asyncio
import gc
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.config import ConfigError, Settings, check_settings, load_settings
from api.kit.cores import usable_cores

if TYPE_CHECKING:  # each command imports what it uses when it runs (a fast --help)
    from api.repositories import Repositories


def _settings(**overrides: Any) -> Settings:
    """The settings, with command-line overrides, checked as a whole; exit 2 when wrong."""
    changed = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = load_settings()
        if changed:
            settings = settings.model_copy(update=changed)
            check_settings(settings)
    except ConfigError as e:
        print(f"agent-memory: {e}", file=sys.stderr)
        raise SystemExit(2) from e
    return settings


def _describe(settings: Settings) -> str:
    if settings.store == "sqlite":
        return f"SQLite at {settings.sqlite_path}, table {settings.dynamodb_table}"
    where = settings.dynamodb_endpoint or f"AWS {settings.aws_region}"
    return f"DynamoDB at {where}, table {settings.dynamodb_table}"


async def _create_table(settings: Settings) -> None:
    from api.store import build_table

    table = build_table(settings)
    try:
        await table.create()
    finally:
        await table.close()


def _check_embedder(settings: Settings) -> None:
    """The embedding backend answers before the server starts, or exit 2 with what to fix
    (the app asks it again at start; the shipped model is loaded once per process)."""
    from api.embeddings.base import EmbeddingConfigError
    from api.embeddings.factory import start_embedder

    async def check() -> None:
        embedder = await start_embedder(settings)
        if embedder is not None:
            await embedder.aclose()

    try:
        asyncio.run(check())
    except EmbeddingConfigError as e:
        print(f"agent-memory: {e}", file=sys.stderr)
        raise SystemExit(2) from e


def serve(args: argparse.Namespace) -> int:
    # Everything imported from here on lives as long as the process: the collector would
    # walk it again and again while the modules load (about 0.1 s of a cold start). The
    # app turns it back on once start-up is done (api/main.py's lifespan).
    gc.disable()
    import uvicorn

    from api.observability import logs

    settings = _settings(host=args.host, port=args.port)
    logs.configure_logging(settings)
    _check_tracing(settings)
    _check_embedder(settings)
    workers = args.workers or usable_cores()
    where = f"http://{settings.host}:{settings.port}"
    print(f"Agent memory API on {where} ({_describe(settings)}, {workers} worker(s))")
    print(f"OpenAPI docs at {where}/docs", flush=True)
    # uvicorn's loggers write through ours (text or JSON, with request ids: log_config
    # None), and our access log (api/observability/middleware.py) replaces uvicorn's.
    if workers == 1:
        from api.main import create_app

        app = create_app(settings)
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level,
            log_config=None,
            access_log=False,
        )
        return 0
    # Each worker is a process of its own that builds the app from the environment
    # (api/worker.py): what the command line chose is handed to it there. Everything the
    # workers share lives in the store (leases, the search change log, runs). This process
    # only watches them: it never imports the app.
    gc.enable()
    os.environ["HOST"], os.environ["PORT"] = settings.host, str(settings.port)
    with _shared_metrics(settings):
        uvicorn.run(
            "api.worker:app",
            host=settings.host,
            port=settings.port,
            workers=workers,
            log_level=settings.log_level,
            log_config=None,
            access_log=False,
        )
    return 0


@contextmanager
def _shared_metrics(settings: Settings) -> Iterator[None]:
    """The workers' metrics, added up in a fresh directory (prometheus_client's
    multiprocess mode) that goes when the server stops; unless PROMETHEUS_MULTIPROC_DIR
    names one already (emptied by whoever set it), or metrics are off."""
    from api.observability.metrics import MULTIPROCESS_DIR

    if settings.metrics == "off" or os.environ.get(MULTIPROCESS_DIR):
        yield
        return
    directory = tempfile.mkdtemp(prefix="agent-memory-metrics-")
    os.environ[MULTIPROCESS_DIR] = directory
    try:
        yield
    finally:
        del os.environ[MULTIPROCESS_DIR]
        shutil.rmtree(directory, ignore_errors=True)


def _check_tracing(settings: Settings) -> None:
    """TRACING's packages are installed, or exit 2 naming the extra."""
    from api.observability import tracing

    try:
        tracing.check(settings)
    except ConfigError as e:
        print(f"agent-memory: {e}", file=sys.stderr)
        raise SystemExit(2) from e


def create_table(args: argparse.Namespace) -> int:
    settings = _settings()
    asyncio.run(_create_table(settings))
    print(f"Table ready: {_describe(settings)}")
    return 0


def reencrypt(args: argparse.Namespace) -> int:
    from api.kit.clock import SystemClock
    from api.repositories import Repositories
    from api.settings import keys
    from api.settings import service as provider_settings
    from api.store import build_table

    settings = _settings()

    async def run() -> int:
        table = build_table(settings)
        repos = Repositories.over(table)
        try:
            return await provider_settings.reencrypt(repos, keys.keyring(settings), SystemClock())
        finally:
            await table.close()

    count = asyncio.run(run())
    print(f"Re-encrypted {count} provider credential(s) with the current ENCRYPTION_KEY.")
    return 0


def reembed(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from api.embeddings.base import EmbeddingConfigError
    from api.embeddings.factory import start_embedder
    from api.kit.clock import SystemClock
    from api.maintenance import reembed as reembedding
    from api.repositories import Repositories
    from api.search.engine import SearchEngine
    from api.store import build_table

    settings = _settings()

    class Bar:
        def __init__(self) -> None:
            self.bar = tqdm(total=0, unit="item", desc="re-embedding", file=sys.stderr)

        def found(self, count: int) -> None:
            self.bar.total = (self.bar.total or 0) + count
            self.bar.refresh()

        def done(self, count: int) -> None:
            self.bar.update(count)

    async def run() -> reembedding.Tally | None:
        embedder = await start_embedder(settings)
        if embedder is None:
            return None
        table = build_table(settings)
        repos = Repositories.over(table)
        engine = SearchEngine(repos.search, embedder, SystemClock())
        bar = Bar()
        try:
            return await reembedding.reembed(
                repos, engine, bar, agent_id=args.agent, batch=args.batch
            )
        finally:
            bar.bar.close()
            await engine.aclose()
            await table.close()

    try:
        tally = asyncio.run(run())
    except EmbeddingConfigError as e:
        print(f"agent-memory: {e}", file=sys.stderr)
        return 2
    if tally is None:
        print(
            "agent-memory: MEMORY_EMBEDDING_BACKEND=none embeds nothing; choose a backend.",
            file=sys.stderr,
        )
        return 2
    print(
        f"{tally.agents} agent(s): {tally.embedded} item(s) embedded, {tally.copied} "
        f"message(s) made searchable, {tally.skipped} skipped (deleted meanwhile), with "
        f"{settings.memory_embedding_backend} embeddings."
    )
    return 0


async def _acting_user(repos: "Repositories", settings: Settings, user: str | None) -> str:
    """Whom export and import act as: `--user`, or in local mode the local user (made if
    this is the store's first use). In google mode `--user` must name a user who signed in
    (the command acts with the store's own access, as create-table does)."""
    from api.kit.clock import SystemClock
    from api.users.service import ensure_local_user

    if settings.create_table:  # as the server does at start
        await repos.table.create()
    if settings.auth_mode == "local":
        # The machine's operator is the local user, or names another of this store's.
        email = user or settings.local_user_email
        await ensure_local_user(repos, email, SystemClock())
        return email
    if user is None:
        raise _Refused("in AUTH_MODE=google, say whose agent it is: --user EMAIL")
    if await repos.users.get(user) is None:
        raise _Refused(f"there is no user {user!r} in {_describe(settings)}")
    return user


class _Refused(Exception):
    """A command-line mistake: printed, exit 2."""


def export(args: argparse.Namespace) -> int:
    from api.agents import service as agents
    from api.errors import AppError
    from api.kit.clock import SystemClock
    from api.repositories import Repositories
    from api.store import build_table
    from api.transfer import service as transfer

    settings = _settings()
    out = sys.stdout.buffer if args.output is None else args.output.open("wb")

    async def run() -> None:
        table = build_table(settings)
        repos = Repositories.over(table)
        try:
            email = await _acting_user(repos, settings, args.user)
            agent = await agents.get_by_id_or_name(repos, email, args.agent)
            lines = transfer.export_agent(
                repos, agent, SystemClock(), with_vectors=not args.no_vectors
            )
            async for chunk in lines:
                await asyncio.to_thread(out.write, chunk)
            await asyncio.to_thread(out.flush)
        finally:
            await table.close()

    try:
        asyncio.run(run())
    except (_Refused, AppError) as e:
        print(f"agent-memory: {getattr(e, 'message', e)}", file=sys.stderr)
        return 2
    finally:
        if args.output is not None:
            out.close()
    return 0


def import_(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from api.embeddings.base import EmbeddingConfigError
    from api.embeddings.factory import start_embedder
    from api.errors import AppError
    from api.kit.clock import SystemClock
    from api.repositories import Repositories
    from api.search.engine import SearchEngine
    from api.store import build_table
    from api.transfer import service as transfer
    from api.transfer.writer import ImportReport

    settings = _settings()
    if not args.file.is_file():
        print(f"agent-memory: no file {str(args.file)!r}", file=sys.stderr)
        return 2

    class Bar:
        def __init__(self) -> None:
            self.bar: tqdm[Any] | None = None

        def checked(self, records: int) -> None:
            self.bar = tqdm(total=records, unit="record", desc="importing", file=sys.stderr)

        def wrote(self, records: int) -> None:
            if self.bar is not None:
                self.bar.update(records)

    async def run() -> list[ImportReport]:
        embedder = await start_embedder(settings)
        table = build_table(settings)
        repos = Repositories.over(table)
        engine = SearchEngine(repos.search, embedder, SystemClock())
        bar = Bar()
        try:
            email = await _acting_user(repos, settings, args.user)
            return await transfer.import_file(repos, engine, email, args.file, bar)
        finally:
            if bar.bar is not None:
                bar.bar.close()
            await engine.aclose()
            await table.close()

    try:
        reports = asyncio.run(run())
    except (_Refused, AppError, EmbeddingConfigError) as e:
        print(f"agent-memory: {getattr(e, 'message', e)}", file=sys.stderr)
        return 2
    for report in reports:
        print(report.summary())
    return 0


def backup(args: argparse.Namespace) -> int:
    from api.maintenance import backup as backups

    settings = _sqlite_settings("backup")
    try:
        made = backups.backup(settings.sqlite_path, settings.dynamodb_table, args.path)
    except backups.BackupRefused as e:
        print(f"agent-memory: {e.message}", file=sys.stderr)
        return 2
    print(f"Backed up {made.items} items ({made.pages} pages) to {made.path}.")
    return 0


def restore(args: argparse.Namespace) -> int:
    from api.maintenance import backup as backups

    settings = _sqlite_settings("restore")
    try:
        made = backups.restore(args.path, settings.dynamodb_table, settings.sqlite_path)
    except backups.BackupRefused as e:
        print(f"agent-memory: {e.message}", file=sys.stderr)
        return 2
    print(f"Restored {made.items} items to {made.path}. Start the server on it.")
    return 0


def _sqlite_settings(command: str) -> Settings:
    settings = _settings()
    if settings.store != "sqlite":
        print(
            f"agent-memory: {command} is for the embedded store (STORE=sqlite); DynamoDB keeps "
            "its own backups (point-in-time recovery, docs/operations.md).",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return settings


def dynamodb_local(args: argparse.Namespace) -> int:
    from api.store.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable

    server = DynamoDBLocal(port=args.port, db_dir=args.db_dir)
    try:
        server.start()
    except DynamoDBLocalUnavailable as e:
        print(f"agent-memory: {e}", file=sys.stderr)
        return 1
    storage = f"files in {args.db_dir}" if args.db_dir else "memory (gone when it stops)"
    print(f"DynamoDB Local on {server.endpoint}, keeping its data in {storage}.")
    print(f"Use it with: STORE=dynamodb DYNAMODB_ENDPOINT={server.endpoint} agent-memory serve")
    print("Ctrl-C stops it.", flush=True)
    stop = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        assert server.process is not None
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, stop)
        server.stop()
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agent-memory", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the API (embedded SQLite unless configured)")
    s.add_argument("--host", help="address to bind (default HOST or 127.0.0.1)")
    s.add_argument("--port", type=int, help="port (default PORT or 8283)")
    s.add_argument(
        "--workers",
        type=_positive,
        help="worker processes sharing the store (default: one per core this process may use)",
    )
    s.set_defaults(run=serve)

    c = sub.add_parser("create-table", help="create the table if it does not exist")
    c.set_defaults(run=create_table)

    r = sub.add_parser(
        "reencrypt",
        help="rewrite credentials encrypted with ENCRYPTION_OLD_KEYS under ENCRYPTION_KEY",
    )
    r.set_defaults(run=reencrypt)

    e = sub.add_parser(
        "reembed",
        help="give every searchable item a vector of the configured embedding model "
        "(resumable, safe while serving)",
    )
    e.add_argument("--agent", help="only this agent (its id)")
    e.add_argument("--batch", type=int, default=32, help="items per write (at most 32)")
    e.set_defaults(run=reembed)

    x = sub.add_parser(
        "export", help="write an agent with all its memory as JSON Lines (to stdout)"
    )
    x.add_argument("agent", help="the agent's id or name")
    x.add_argument("--user", help="the agent's owner (default: the local user)")
    x.add_argument("-o", "--output", type=Path, help="write to this file, not stdout")
    x.add_argument(
        "--no-vectors", action="store_true", help="leave out vectors (importers embed again)"
    )
    x.set_defaults(run=export)

    i = sub.add_parser(
        "import", help="import an export file or a Letta agent file (.af) as a new agent"
    )
    i.add_argument("file", type=Path, help="the file")
    i.add_argument("--user", help="the user it is imported for (default: the local user)")
    i.set_defaults(run=import_)

    b = sub.add_parser(
        "backup", help="copy the SQLite store, consistent while the server runs, to PATH"
    )
    b.add_argument("path", type=Path, help="the backup file to write (must not exist)")
    b.set_defaults(run=backup)

    t = sub.add_parser(
        "restore", help="replace the SQLite store with a backup (stop the server first)"
    )
    t.add_argument("path", type=Path, help="the backup file")
    t.set_defaults(run=restore)

    d = sub.add_parser("dynamodb-local", help="run AWS's DynamoDB Local for development")
    d.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    d.add_argument("--db-dir", type=Path, help="keep data in this directory (default: memory)")
    d.set_defaults(run=dynamodb_local)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
