# The service-level tests run on every engine of the contract suite.
from tests.contract.conftest import engine, table

__all__ = ["engine", "table"]
