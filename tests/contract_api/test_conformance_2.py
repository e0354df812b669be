"""A share of the conformance suite (tests/contract_api/conformance.py): the operations
`deal` gives this file's number, checked against an app of the share's own."""

from collections.abc import Iterator

import pytest

from tests.contract_api.conformance import Share

SHARE = Share.of(__file__)


@pytest.fixture(scope="module", autouse=True)
def _lifespan() -> Iterator[None]:
    yield from SHARE.lifespan()


@pytest.mark.parametrize("operation", list(SHARE.operations))
def test_operation_conforms(operation: str) -> None:
    SHARE.check(operation)


def test_every_operation_was_exercised() -> None:
    SHARE.every_operation_exercised()
