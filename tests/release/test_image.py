"""The image, with no container engine: the Dockerfile's stages replayed outside a container
(tests/release/dockerfile.py: the same files copied into empty directories, the same RUN
commands and environment), every stage's directory but the last removed, and the image's
own command line started from that directory alone, as `docker run -e PORT=<free port>`
would: its health check passes, and it serves /health, the web app at / and a chat turn."""

import shutil
import subprocess
import time
from pathlib import Path

from tests.parallel import free_port
from tests.release.dockerfile import Replay
from tests.release.install import (
    CHECKOUT,
    REPORT,
    machine_python,
    needs_release_check,
    outside_env,
    serving,
    uv,
)
from tests.release.smoke import check_server

pytestmark = needs_release_check


def test_the_replayed_image_serves_the_web_app_and_a_turn(tmp_path: Path, version: str) -> None:
    steps: list[str] = []
    replay = Replay(
        dockerfile=CHECKOUT / "Dockerfile",
        context=CHECKOUT,
        root=tmp_path / "stages",
        build_env=outside_env(),
        python=machine_python(),
        uv=uv(),
        log=steps.append,
    )
    started = time.monotonic()
    image = replay.run()
    REPORT.append(
        f"Dockerfile replayed ({len(steps)} COPY and RUN steps, stages "
        f"{', '.join(replay.stage_roots)}) in {time.monotonic() - started:.0f} s:"
    )
    REPORT.extend(f"  {step.replace(str(tmp_path), '<tmp>')}" for step in steps)
    for stage_root in replay.stage_roots.values():
        if stage_root != image.root:
            shutil.rmtree(stage_root)
    # The runtime stage holds the venv copied from the build stage and the data volume only.
    assert sorted(p.name for p in image.root.iterdir()) == ["app", "data"]
    assert [p.name for p in (image.root / "app").iterdir()] == [".venv"]
    assert image.exposed == ["8283"]
    assert image.env["PORT"] == "8283"
    assert image.env["HOST"] == "0.0.0.0"  # noqa: S104 - the image's bind address
    assert image.user == "10001:10001"

    port = free_port()
    env = {**image.env, "PORT": str(port)}  # docker run -e PORT=...

    def resolved(command: list[str]) -> list[str]:
        found = shutil.which(command[0], path=env["PATH"])
        assert found, f"{command[0]} is not on the image's PATH"
        return [found, *command[1:]]

    assert resolved(image.command)[0] == str(image.root / "app" / ".venv" / "bin" / "agent-memory")
    with serving(
        resolved(image.command),
        port=port,
        cwd=image.workdir,
        env=env,
        log=tmp_path / "server.log",
    ) as served:
        REPORT.append(
            f"the replayed image's `{' '.join(image.command)}` answered /health in "
            f"{served.start_seconds:.1f} s (one worker per core)"
        )
        health = subprocess.run(resolved(image.healthcheck), env=env, timeout=10, check=False)
        assert health.returncode == 0, "the image's HEALTHCHECK failed"
        said = check_server(served.root, version)
        assert said["database_path"] == str(image.root / "data" / "agent-memory.db")
    REPORT.append(f"  not replayed: {'; '.join(image.skipped) or 'nothing'}")
