"""The table's shape, read from the CloudFormation template in `infra/`, its single source.

In a checkout that is `infra/template.yaml`; an installed wheel carries the same file as
package data, `api/store/template.yaml` (hatch_build.py puts it there)."""

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from api.store.table import PK, SK, TTL, UnknownIndex


def template_path() -> Path:
    """The template: the wheel's copy when installed, else the checkout's."""
    packaged = Path(__file__).resolve().with_name("template.yaml")
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "infra" / "template.yaml"


TEMPLATE_PATH = template_path()
TABLE_RESOURCE = "Table"


@dataclass(frozen=True)
class IndexDefinition:
    name: str
    pk: str
    sk: str


@dataclass(frozen=True)
class TableDefinition:
    """Key attributes, secondary indexes and TTL attribute of the one table."""

    indexes: tuple[IndexDefinition, ...]
    ttl_attribute: str
    properties: dict[str, Any]

    def index(self, name: str) -> IndexDefinition:
        for index in self.indexes:
            if index.name == name:
                return index
        known = ", ".join(i.name for i in self.indexes) or "none"
        raise UnknownIndex(f"Unknown index {name!r}; the table has: {known}.")

    def create_table_params(self, table_name: str) -> dict[str, Any]:
        """CreateTable parameters (DynamoDB API shape) for a table with this definition."""
        props = self.properties
        params: dict[str, Any] = {
            "TableName": table_name,
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
        }
        if props.get("GlobalSecondaryIndexes"):
            params["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if props.get("SSESpecification", {}).get("SSEEnabled"):
            params["SSESpecification"] = {"Enabled": True}
        return params

    @property
    def point_in_time_recovery(self) -> bool:
        spec = self.properties.get("PointInTimeRecoverySpecification", {})
        return bool(spec.get("PointInTimeRecoveryEnabled"))


def _key_names(key_schema: list[dict[str, str]]) -> tuple[str, str]:
    by_type = {k["KeyType"]: k["AttributeName"] for k in key_schema}
    return by_type["HASH"], by_type["RANGE"]


def parse_definition(template: dict[str, Any]) -> TableDefinition:
    props = template["Resources"][TABLE_RESOURCE]["Properties"]
    pk, sk = _key_names(props["KeySchema"])
    if (pk, sk) != (PK, SK):
        raise ValueError(f"the table's keys must be {PK}/{SK}, the template has {pk}/{sk}")
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    indexes = []
    for gsi in props.get("GlobalSecondaryIndexes", []):
        ipk, isk = _key_names(gsi["KeySchema"])
        if types.get(ipk) != "S" or types.get(isk) != "S":
            raise ValueError(f"index {gsi['IndexName']} must have string keys")
        indexes.append(IndexDefinition(gsi["IndexName"], ipk, isk))
    ttl = props.get("TimeToLiveSpecification", {}).get("AttributeName", TTL)
    if ttl != TTL:
        raise ValueError(f"the TTL attribute must be {TTL!r}, the template has {ttl!r}")
    return TableDefinition(indexes=tuple(indexes), ttl_attribute=ttl, properties=props)


@cache
def load_definition(path: Path = TEMPLATE_PATH) -> TableDefinition:
    with path.open(encoding="utf-8") as f:
        return parse_definition(yaml.safe_load(f))
