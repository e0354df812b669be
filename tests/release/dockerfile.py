"""The Dockerfile, read and replayed outside a container (no container engine runs on our
machines): each stage in an empty directory of its own, its files copied from the context
(less .dockerignore's) or from an earlier stage, its ENV set, its RUN commands run in its
WORKDIR, and at the end the last stage's command line, which the caller starts.

An absolute path of the image's own directories (a WORKDIR's, a COPY's, a VOLUME's: /web,
/app, /data) becomes the same path under the stage's directory. The base images are this
machine's tools: `python:X.Y-slim` is its Python X.Y (`/usr/local/bin/pythonX.Y`), `node:N`
its Node, and `COPY --from=<uv's image> /uv /uvx /bin/` its uv. A RUN's `--mount=type=cache`
is the machine's own cache. The runtime stage's user setup (`groupadd`, `useradd`, `chown`)
is not run here (the replay runs as this machine's user); its `mkdir` is. Anything else the
replay does not know fails it, so the image cannot do something the replay skips."""

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

SETUP_COMMANDS = ("groupadd", "useradd", "chown", "mkdir")  # a runtime stage's user setup
BIN_DIRS = ("/bin", "/usr/bin", "/usr/local/bin")  # on every base image's PATH


class Unsupported(ValueError):
    """The Dockerfile does something the replay cannot do."""


@dataclass(frozen=True)
class Step:
    instruction: str  # upper case
    flags: dict[str, str]  # --from=web -> {"from": "web"}; --mount=... kept whole
    args: str  # the rest, continuation lines joined


@dataclass
class Stage:
    name: str
    image: str
    steps: list[Step] = field(default_factory=list)


def parse(text: str) -> list[Stage]:
    """The stages, in order. Comment lines (also inside a continued instruction) dropped."""
    stages: list[Stage] = []
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    if pending:
        raise Unsupported("the last instruction ends with a backslash")
    for instruction_line in logical:
        word, _, rest = instruction_line.partition(" ")
        flags: dict[str, str] = {}
        rest = rest.strip()
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags[name] = value
            rest = rest.strip()
        step = Step(word.upper(), flags, rest)
        if step.instruction == "FROM":
            image, _, name = rest.partition(" AS ")
            if not name:
                image, _, name = rest.partition(" as ")
            stages.append(Stage(name.strip() or str(len(stages)), image.strip()))
        elif not stages:
            raise Unsupported(f"{step.instruction} before FROM")
        else:
            stages[-1].steps.append(step)
    return stages


def exec_form(args: str) -> list[str]:
    """A JSON array (CMD, HEALTHCHECK's CMD, VOLUME)."""
    if not args.startswith("["):
        raise Unsupported(f"not the exec (JSON) form: {args}")
    parsed = json.loads(args)
    if not isinstance(parsed, list) or not all(isinstance(a, str) for a in parsed):
        raise Unsupported(f"not a list of strings: {args}")
    return parsed


def env_pairs(args: str) -> list[tuple[str, str]]:
    pairs = []
    for word in shlex.split(args):
        key, equals, value = word.partition("=")
        if not equals:
            raise Unsupported(f"ENV without '=': {args}")
        pairs.append((key, value))
    return pairs


def ignored(context: Path) -> Callable[[str], bool]:
    """.dockerignore's patterns (no `!` exceptions): whether a context path is left out."""
    file = context / ".dockerignore"
    lines = file.read_text().splitlines() if file.exists() else []
    patterns = [p.strip().rstrip("/") for p in lines if p.strip() and not p.startswith("#")]
    if any(p.startswith("!") for p in patterns):
        raise Unsupported(".dockerignore exceptions (!) are not replayed")

    def matches(relative: str) -> bool:
        parts = PurePosixPath(relative).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        for pattern in patterns:
            if pattern.startswith("**/"):
                tail = pattern[3:]
                tails = [
                    "/".join(parts[i : j + 1])
                    for i in range(len(parts))
                    for j in range(i, len(parts))
                ]
                if any(fnmatch.fnmatchcase(t, tail) for t in tails):
                    return True
            elif any(fnmatch.fnmatchcase(p, pattern) for p in prefixes):
                return True
        return False

    return matches


@dataclass
class Image:
    """What the replay left: the last stage's directory and how to start it."""

    root: Path  # the last stage's directory: / of the image
    env: dict[str, str]  # a container's environment (ENV, paths mapped)
    workdir: Path
    command: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)
    exposed: list[str] = field(default_factory=list)
    user: str = ""
    volumes: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # RUN parts not run, and why


@dataclass
class Replay:
    dockerfile: Path
    context: Path
    root: Path  # empty: each stage gets root/<stage>
    build_env: Mapping[str, str]  # the machine's environment for the build stages
    python: str  # this machine's Python, standing for python:X.Y-slim's
    uv: str  # this machine's uv, for uv's image
    log: Callable[[str], None] = print
    stage_roots: dict[str, Path] = field(default_factory=dict)

    def run(self) -> Image:
        stages = parse(self.dockerfile.read_text())
        is_ignored = ignored(self.context)
        own = _own_directories(stages)
        image: Image | None = None
        for number, stage in enumerate(stages):
            last = number == len(stages) - 1
            image = self._stage(stage, own, is_ignored, last=last)
        assert image is not None
        return image

    def _stage(
        self, stage: Stage, own: set[str], is_ignored: Callable[[str], bool], *, last: bool
    ) -> Image:
        root = self.root / stage.name
        root.mkdir(parents=True)
        self.stage_roots[stage.name] = root
        system = self._base_image(stage.image)

        def host(path: str, workdir: Path | None = None) -> Path:
            if path in system:
                return Path(system[path])
            if not path.startswith("/"):
                assert workdir is not None, path
                return workdir / path
            if path.split("/")[1] not in own and path.rstrip("/") not in BIN_DIRS:
                raise Unsupported(f"{path} is outside the image's own directories {own}")
            return root / path.lstrip("/")

        def mapped_value(value: str, env: Mapping[str, str]) -> str:
            parts = []
            for part in value.split(":"):
                if part.startswith("/") and "://" not in value:
                    part = str(host(part))
                parts.append(re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m[1], ""), part))
            return ":".join(parts)

        # PATH: the stage's own bin directories (uv's, when copied there), then this
        # machine's (less the checkout's venv): the base image's PATH, for the replay.
        bins = [str(root / d.lstrip("/")) for d in BIN_DIRS]
        base_path = os.pathsep.join([*bins, self.build_env.get("PATH", "")])
        env = {**self.build_env, "PATH": base_path}
        image_env: dict[str, str] = {}
        workdir = root
        image = Image(root=root, env={}, workdir=root)
        for step in stage.steps:
            if step.instruction == "WORKDIR":
                workdir = host(step.args, workdir)
                workdir.mkdir(parents=True, exist_ok=True)
            elif step.instruction == "ENV":
                for key, value in env_pairs(step.args):
                    image_env[key] = env[key] = mapped_value(value, env)
            elif step.instruction == "COPY":
                self._copy(step, host, workdir, is_ignored)
            elif step.instruction == "RUN":
                self._run(step, host, workdir, env, image, own, last=last)
            elif step.instruction == "CMD":
                image.command = exec_form(step.args)
            elif step.instruction == "HEALTHCHECK":
                _, _, command = step.args.partition("CMD ")
                image.healthcheck = exec_form(command.strip())
            elif step.instruction == "EXPOSE":
                image.exposed = step.args.split()
            elif step.instruction == "USER":
                image.user = step.args
            elif step.instruction == "VOLUME":
                for volume in exec_form(step.args):
                    host(volume).mkdir(parents=True, exist_ok=True)
                    image.volumes.append(host(volume))
            else:
                raise Unsupported(f"{step.instruction} is not replayed")
        image.workdir = workdir
        # A container's environment: the base image's PATH, a HOME, and the image's ENV.
        image.env = {"PATH": base_path, "HOME": str(root / "home"), "LANG": "C.UTF-8"}
        image.env.update(image_env)
        return image

    def _base_image(self, image: str) -> dict[str, str]:
        """The image's own paths that are this machine's tools."""
        name, _, tag = image.partition(":")
        if name == "python":
            version = re.match(r"\d+\.\d+", tag)
            assert version, image
            here = f"{sys.version_info.major}.{sys.version_info.minor}"
            if version[0] != here:
                raise Unsupported(f"{image}: this machine's Python is {here}")
            python = self.python
            return {
                f"/usr/local/bin/python{here}": python,
                "/usr/local/bin/python3": python,
                "/usr/local/bin/python": python,
            }
        if name == "node":
            if not shutil.which("node") or not shutil.which("npm"):
                raise Unsupported(f"{image}: this machine has no Node and npm")
            return {}
        raise Unsupported(f"base image {image} is not replayed")

    def _copy(
        self,
        step: Step,
        host: Callable[..., Path],
        workdir: Path,
        is_ignored: Callable[[str], bool],
    ) -> None:
        *sources, destination = shlex.split(step.args)
        target = host(destination, workdir)
        into = destination.endswith("/") or len(sources) > 1
        origin = step.flags.get("from")
        for source in sources:
            if origin is None:
                found = self.context / source.rstrip("/")
                relative = source.rstrip("/")
            elif origin in self.stage_roots:
                found = self.stage_roots[origin] / source.strip("/")
                relative = None
            elif origin.startswith("ghcr.io/astral-sh/uv:"):
                tool = source.strip("/")
                if tool not in ("uv", "uvx"):
                    raise Unsupported(f"{tool} from {origin}")
                assert into, step.args
                target.mkdir(parents=True, exist_ok=True)
                machine = Path(self.uv).with_name(tool)
                (target / tool).symlink_to(machine if machine.exists() else self.uv)
                continue
            else:
                raise Unsupported(f"COPY --from={origin}")
            if not found.exists():
                raise Unsupported(f"COPY {source}: not found at {found}")
            if found.is_dir():
                _copy_tree(found, target, relative, is_ignored)
            else:
                dest = target / found.name if into else target
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(found, dest)
        self.log(f"COPY --from={origin} {step.args}" if origin else f"COPY {step.args}")

    def _run(
        self,
        step: Step,
        host: Callable[..., Path],
        workdir: Path,
        env: Mapping[str, str],
        image: Image,
        own: set[str],
        *,
        last: bool,
    ) -> None:
        mount = step.flags.get("mount")
        if mount is not None and "type=cache" not in mount:
            raise Unsupported(f"RUN --mount={mount}")
        command = step.args
        parts = [p.strip() for p in command.split("&&")]
        if last and all(p.split()[0] in SETUP_COMMANDS for p in parts):
            for part in parts:
                words = shlex.split(part)
                if words[0] == "mkdir":
                    for word in words[1:]:
                        if not word.startswith("-"):
                            host(word).mkdir(parents=True, exist_ok=True)
                else:
                    image.skipped.append(f"{words[0]} (the replay runs as this machine's user)")
            return
        # The image's own absolute paths, as the stage's directory has them.
        roots = "|".join(map(re.escape, sorted(own)))
        pattern = rf"(?<![\w./-])(/(?:{roots})(?![\w.-])(?:/[^\s'\"]*)?)"
        command = re.sub(pattern, lambda m: str(host(m[1])), command)
        self.log(f"RUN {command}")
        done = subprocess.run(  # noqa: S602 - a RUN is a shell command
            command,
            shell=True,
            executable="/bin/bash",
            cwd=workdir,
            env=dict(env),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"RUN {command} failed ({done.returncode}):\n{done.stdout[-3000:]}"
                f"{done.stderr[-3000:]}"
            )


def _own_directories(stages: list[Stage]) -> set[str]:
    """The first components of the absolute paths the image makes its own."""
    own: set[str] = set()
    for stage in stages:
        for step in stage.steps:
            paths: list[str] = []
            if step.instruction == "WORKDIR":
                paths = [step.args]
            elif step.instruction == "COPY":
                paths = shlex.split(step.args)[-1:]
            elif step.instruction == "VOLUME":
                paths = exec_form(step.args)
            own.update(
                p.split("/")[1]
                for p in paths
                if p.startswith("/") and p not in BIN_DIRS and p.rstrip("/") not in BIN_DIRS
            )
    return own


def _copy_tree(
    source: Path, target: Path, relative: str | None, is_ignored: Callable[[str], bool]
) -> None:
    """A directory's contents into target (COPY's rule), symbolic links as links, less what
    .dockerignore names when it comes from the context (`relative`: its path there)."""

    def left_out(directory: str, names: list[str]) -> set[str]:
        if relative is None:
            return set()
        inside = Path(directory).relative_to(source)
        return {n for n in names if is_ignored(str(PurePosixPath(relative) / inside / n))}

    shutil.copytree(source, target, symlinks=True, ignore=left_out, dirs_exist_ok=True)
