"""The conformance suite's shares (tests/contract_api/conformance.py) cover every operation:
each share has its file, and every operation of the document falls in one of them."""

from pathlib import Path

from tests.contract_api.conformance import FILES, HEAVY, SHARES, deal, documented


def test_every_share_has_its_file() -> None:
    found = sorted(p.name for p in Path(__file__).parent.glob("test_conformance_[0-9]*.py"))
    assert found == sorted(FILES)


def test_every_operation_falls_in_one_share() -> None:
    dealt = deal(documented())
    assert set(dealt) == documented()
    assert set(dealt.values()) == set(range(1, SHARES + 1))


def test_the_heavy_operations_are_documented_ones() -> None:
    """A renamed heavy operation would otherwise be dealt among the rest, unnoticed."""
    assert set(HEAVY) <= documented()
