"""Agent memory platform: agents with long-term memory over REST and SSE."""

import os
from importlib.metadata import PackageNotFoundError, version

# One BLAS thread, set before numpy loads (an explicit setting wins). The server's one BLAS
# call is a search's matrix-vector product, a fraction of a millisecond on one thread;
# OpenBLAS split it over every core and woke its sleeping threads for each search, which
# on a busy machine cost 4-10 ms a search (an agent of 2,000 messages: 1.2 ms per search
# with one thread, 2.7-7 ms with two; docs/performance.md). A worker per core
# (`serve --workers N`) is how the server uses the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    __version__ = version("agent-memory")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
