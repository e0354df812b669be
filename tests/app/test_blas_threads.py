"""The server does its BLAS work (a search's matrix-vector product) on one thread unless
OPENBLAS_NUM_THREADS says otherwise: OpenBLAS's threads, woken for every search, cost
more than the product itself (api/__init__.py)."""

import os
import subprocess
import sys

import pytest

# How many threads numpy's OpenBLAS runs, asked from the library it loaded.
PROBE = """
import ctypes, glob, os
import api, numpy
libs = glob.glob(os.path.join(os.path.dirname(numpy.__path__[0]), "numpy.libs", "*openblas*"))
if not libs:
    print("no-openblas")
else:
    lib = ctypes.CDLL(libs[0])
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                 "openblas_get_num_threads"):
        if hasattr(lib, name):
            print(getattr(lib, name)())
            break
    else:
        print("no-openblas")
"""


def blas_threads(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = done.stdout.strip()
    if found == "no-openblas":
        pytest.skip("this numpy is not built with OpenBLAS")
    return found


def test_one_blas_thread_by_default() -> None:
    assert blas_threads() == "1"


def test_an_explicit_setting_wins() -> None:
    assert blas_threads(OPENBLAS_NUM_THREADS="2") == "2"
