"""The order in which pytest-xdist hands test files to its workers (`--dist loadfile`): the
longest first, so that no worker is left with a long file while the other idles at the end
(xdist's own order, by number of tests, put files of one long test last).

How long each file takes is in `file_seconds.json`, from a run's JUnit XML:
`./dev test --junitxml=run.xml`, then `uv run python -m tests.schedule run.xml`. A file not
listed counts a second per test; a stale list only orders less well."""

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

SECONDS = Path(__file__).with_name("file_seconds.json")
ROOT = Path(__file__).resolve().parents[1]


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(items: list[pytest.Item]) -> None:
    """Sorts `items` by their file's time, longest first; a file's tests keep their order
    and stay together (the sort is stable)."""
    seconds: dict[str, float] = json.loads(SECONDS.read_text()) if SECONDS.exists() else {}
    tests = Counter(file_of(item.nodeid) for item in items)

    def weight(item: pytest.Item) -> float:
        path = file_of(item.nodeid)
        return seconds.get(path, float(tests[path]))

    items.sort(key=weight, reverse=True)


def seconds_per_file(junit_xml: Path) -> dict[str, float]:
    """Each test file's time in a JUnit XML report (its tests' setup, call and teardown)."""
    found: dict[str, float] = {}
    for case in ET.parse(junit_xml).iter("testcase"):  # noqa: S314 (our own report)
        parts = case.get("classname", "").split(".")
        # A class's tests are named module.Class: the file is the longest prefix that is one.
        for end in range(len(parts), 0, -1):
            path = "/".join(parts[:end]) + ".py"
            if (ROOT / path).exists():
                found[path] = found.get(path, 0.0) + float(case.get("time", "0"))
                break
    return {path: round(found[path], 1) for path in sorted(found)}


if __name__ == "__main__":
    SECONDS.write_text(json.dumps(seconds_per_file(Path(sys.argv[1])), indent=1) + "\n")
