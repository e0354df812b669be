"""The release check: both packages' wheels and the server's sdist, each installed into a
fresh venv outside the checkout, and what a user does next: start the server (pip's
`agent-memory serve`, `uvx --from <wheel> agent-memory serve`, and pipx's), open `/`, `/docs`,
`/health`, make an agent, chat offline; and `learning()` from the client's wheel alone
against the installed server. A wheel without the web app or the table's template fails."""

import json
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_servers import Reply, start_fake_openai
from tests.parallel import free_port
from tests.release.install import (
    CHECKOUT,
    REPORT,
    Dists,
    Served,
    machine_python,
    make_venv,
    needs_release_check,
    outside_env,
    pip_install,
    run,
    serving,
    uv,
)
from tests.release.smoke import check_server

pytestmark = needs_release_check

PACKAGE_DATA = {  # the wheel's copy: the checkout's file
    "api/store/template.yaml": CHECKOUT / "infra" / "template.yaml",
    "api/webapp/pages.json": CHECKOUT / "web" / "src" / "pages.json",
}


def test_the_server_wheel_carries_its_package_data(dists: Dists) -> None:
    names = zipfile.ZipFile(dists.server_wheel).namelist()
    wheel = zipfile.ZipFile(dists.server_wheel)
    for inside, source in PACKAGE_DATA.items():
        assert wheel.read(inside) == source.read_bytes(), f"{inside} is not {source}"
    index = wheel.read("api/webapp/dist/index.html").decode()
    assert '<div id="root">' in index
    for asset in ("/assets/" + n.rsplit("/", 1)[1] for n in names if "/dist/assets/" in n):
        # A compressed copy (.br, .gz) is its asset's, sent in its place.
        named = asset.removesuffix(".br").removesuffix(".gz")
        assert named in index or asset.endswith(".map"), f"{asset} is not the built page's"
    assert any(n.startswith("api/webapp/dist/assets/") and n.endswith(".js") for n in names)
    assert "api/embeddings/onnx_model/model.onnx" in names  # the shipped embedding model
    outside = {n.split("/")[0] for n in names} - {"api", dists.server_wheel.name.split("-")[0]}
    assert outside == {"agent_memory-" + dists.server_wheel.name.split("-")[1] + ".dist-info"}
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "client/"))]


def test_the_sdist_carries_the_built_web_app(dists: Dists) -> None:
    with tarfile.open(dists.server_sdist) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"web/dist/index.html", "infra/template.yaml", "web/src/pages.json"} <= names
    assert "hatch_build.py" in names


def test_a_build_without_the_web_app_is_refused(dists: Dists, tmp_path: Path) -> None:
    """The sdist unpacked, its web/dist removed: the wheel's build fails and says why."""
    with tarfile.open(dists.server_sdist) as sdist:
        sdist.extractall(tmp_path, filter="data")
    (source,) = tmp_path.iterdir()
    for built in sorted((source / "web" / "dist").rglob("*"), reverse=True):
        built.rmdir() if built.is_dir() else built.unlink()
    done = subprocess.run(
        [uv(), "build", "--wheel", "--out-dir", tmp_path / "out", source],
        cwd=tmp_path,
        env=outside_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "web/dist/index.html is missing" in done.stderr, done.stderr[-2000:]
    assert not list((tmp_path / "out").glob("*.whl"))


def test_the_client_wheel_is_the_client_alone(dists: Dists) -> None:
    wheel = zipfile.ZipFile(dists.client_wheel)
    names = wheel.namelist()
    assert "client/__init__.py" in names
    assert "client/py.typed" in names
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "client"
    }
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    lines = wheel.read(metadata).decode().splitlines()
    extras = {line.split(": ", 1)[1] for line in lines if line.startswith("Provides-Extra: ")}
    assert extras == {"openai", "anthropic"}
    requires = [line.split(": ", 1)[1] for line in lines if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == ["httpx2>=2.12"]


@pytest.fixture(scope="module")
def server_venv(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv of the machine's Python with the server's wheel: `pip install` of it."""
    venv = tmp_path_factory.mktemp("server-wheel") / "venv"
    env = outside_env()
    make_venv(venv, env)
    seconds = pip_install(venv, dists.server_wheel, env=env)
    REPORT.append(f"server wheel installed into a fresh venv in {seconds:.1f} s (uv's cache)")
    return venv


@pytest.fixture(scope="module")
def wheel_server(server_venv: Path) -> Iterator[Served]:
    home = server_venv.parent
    env = outside_env(SQLITE_PATH=str(home / "data" / "agent-memory.db"), HOME=str(home))
    port = free_port()
    command: list[str | Path] = [server_venv / "bin" / "agent-memory", "serve", "--port", str(port)]
    with serving(
        [*command, "--workers", "1"], port=port, cwd=home, env=env, log=home / "server.log"
    ) as served:
        REPORT.append(
            f"installed wheel's `agent-memory serve` (one worker, first start) answered "
            f"/health in {served.start_seconds:.1f} s"
        )
        yield served


def test_the_installed_wheel_is_used_not_the_checkout(server_venv: Path) -> None:
    where = subprocess.run(
        [server_venv / "bin" / "python", "-c", "import api; print(api.__file__)"],
        cwd=server_venv.parent,
        env=outside_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(server_venv)), where


def test_the_installed_wheel_serves_everything(wheel_server: Served, version: str) -> None:
    said = check_server(wheel_server.root, version)
    assert said["embedding_dimension"] == 384  # the shipped model loaded


def test_uvx_runs_the_wheel(dists: Dists, version: str, tmp_path: Path) -> None:
    """`uvx --from <wheel> agent-memory serve`: a tool environment of uv's own."""
    port = free_port()
    env = outside_env(SQLITE_PATH=str(tmp_path / "agent-memory.db"), HOME=str(tmp_path))
    command: list[str | Path] = [
        uv(),
        "tool",
        "run",
        "--from",
        dists.server_wheel,
        "agent-memory",
        "serve",
    ]
    with serving(
        [*command, "--port", str(port), "--workers", "1"],
        port=port,
        cwd=tmp_path,
        env=env,
        log=tmp_path / "server.log",
    ) as served:
        REPORT.append(
            f"`uvx --from <wheel> agent-memory serve` answered /health in "
            f"{served.start_seconds:.1f} s (its environment made first)"
        )
        check_server(served.root, version)


def test_pipx_installs_the_wheel(dists: Dists, version: str, tmp_path: Path) -> None:
    """`pipx install <wheel>` then `agent-memory serve` from pipx's bin directory: pipx
    (itself installed into a venv of its own) makes its venv with pip, from PyPI."""
    tools = tmp_path / "pipx-tool"
    env = outside_env(
        HOME=str(tmp_path),
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_DEFAULT_PYTHON=machine_python(),
        SQLITE_PATH=str(tmp_path / "agent-memory.db"),
    )
    make_venv(tools, env)
    pip_install(tools, "pipx", env=env)
    seconds = run([tools / "bin" / "pipx", "install", dists.server_wheel], cwd=tmp_path, env=env)
    port = free_port()
    with serving(
        [tmp_path / "bin" / "agent-memory", "serve", "--port", str(port), "--workers", "1"],
        port=port,
        cwd=tmp_path,
        env=env,
        log=tmp_path / "server.log",
    ) as served:
        REPORT.append(
            f"`pipx install <wheel>` took {seconds:.1f} s (pip, from PyPI); its "
            f"`agent-memory serve` answered /health in {served.start_seconds:.1f} s"
        )
        check_server(served.root, version)


def test_the_sdist_installs_and_serves(dists: Dists, version: str, tmp_path: Path) -> None:
    """pip install of the sdist builds a wheel from it with no Node (the web app is in it)."""
    venv = tmp_path / "venv"
    env = outside_env(SQLITE_PATH=str(tmp_path / "agent-memory.db"), HOME=str(tmp_path))
    make_venv(venv, env)
    seconds = pip_install(venv, dists.server_sdist, env=env)
    REPORT.append(f"server sdist built and installed into a fresh venv in {seconds:.1f} s")
    port = free_port()
    command: list[str | Path] = [
        venv / "bin" / "agent-memory",
        "serve",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    with serving(command, port=port, cwd=tmp_path, env=env, log=tmp_path / "server.log") as s:
        check_server(s.root, version)


LEARNING = """
import json, sys
from openai import OpenAI
from client import learning

agent, server_url, base_url = sys.argv[1:4]
oai = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
with learning(agent, server_url=server_url):
    oai.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "My name is Alice."}]
    )
with learning(agent, server_url=server_url) as memory:
    answer = oai.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "What is my name?"}]
    )
try:
    import api
    server_importable = True
except ImportError:
    server_importable = False
print(json.dumps({
    "answer": answer.choices[0].message.content,
    "stored": memory.stored,
    "failures": memory.capture_failures + memory.context_failures,
    "server_importable": server_importable,
}))
"""


def test_learning_from_the_client_wheel(dists: Dists, wheel_server: Served, tmp_path: Path) -> None:
    """The client's wheel alone (with its `openai` extra) in a fresh venv: learning()
    against the installed server stores the exchange and brings the memory back."""
    venv = tmp_path / "venv"
    env = outside_env(HOME=str(tmp_path))
    make_venv(venv, env)
    seconds = pip_install(venv, f"{dists.client_wheel}[openai,anthropic]", env=env)
    REPORT.append(f"client wheel with its openai and anthropic extras installed in {seconds:.1f} s")
    with start_fake_openai() as fake:
        fake.replies += [Reply(text="Hello Alice."), Reply(text="You are Alice.")]
        done = subprocess.run(
            [venv / "bin" / "python", "-c", LEARNING, "release", wheel_server.root, fake.base_url],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out == {
            "answer": "You are Alice.",
            "stored": 2,
            "failures": 0,
            "server_importable": False,
        }
        assert "Alice" in fake.requests[-1]["messages"][0]["content"]  # memory went in
    run([venv / "bin" / "python", "-c", "import anthropic, openai"], cwd=tmp_path, env=env)
