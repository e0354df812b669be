"""What the benchmark scripts share: percentiles, a table printed row by row, and running
the SQLite measurement, then DynamoDB Local's when it can start."""

import statistics
import sys
from collections.abc import Callable, Sequence

from api.store.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable


def p50_p95_ms(seconds: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000


class Report:
    """Text columns left-aligned, numbers right-aligned, each in its width."""

    def __init__(self, columns: Sequence[str], widths: Sequence[int], *, text: int = 1) -> None:
        self.widths = tuple(widths)
        self.text = text
        print(self.row(columns))
        print(self.row(["-" * w for w in self.widths]))

    def row(self, cells: Sequence[str]) -> str:
        aligned = [
            cell.ljust(width) if i < self.text else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, self.widths, strict=True))
        ]
        return "  ".join(aligned)

    def print(self, cells: Sequence[str]) -> None:
        print(self.row(cells), flush=True)


def on_both_engines(sqlite: Callable[[], None], dynamodb: Callable[[DynamoDBLocal], None]) -> int:
    """Run both measurements; 1 after the SQLite one when DynamoDB Local cannot start."""
    sqlite()
    try:
        server = DynamoDBLocal().start()
    except DynamoDBLocalUnavailable as e:
        print(f"\nDynamoDB Local could not start, so it was not measured: {e}", file=sys.stderr)
        return 1
    try:
        dynamodb(server)
    finally:
        server.stop()
    return 0
