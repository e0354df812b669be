# The service-level tests run on every engine of the contract suite.
from tests.contract.conftest import engine, moto_aws, table

__all__ = ["engine", "moto_aws", "table"]
