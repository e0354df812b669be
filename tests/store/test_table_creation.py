"""The app creates its table from the template's definition, TTL included."""

import uuid

import pytest

from api.store.definition import load_definition
from api.store.dynamodb import DynamoTable
from api.store.dynamodb_local import DynamoDBLocal


async def test_create_makes_the_defined_table_and_is_idempotent(
    dynamodb_local: DynamoDBLocal,
) -> None:
    definition = load_definition()
    name = f"created-{uuid.uuid4().hex[:8]}"
    table = DynamoTable(name, definition, endpoint_url=dynamodb_local.endpoint)
    await table.create()
    await table.create()
    described = table.client.describe_table(TableName=name)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in described["KeySchema"]} == {
        "pk": "HASH",
        "sk": "RANGE",
    }
    assert [g["IndexName"] for g in described["GlobalSecondaryIndexes"]] == ["gsi1"]
    ttl = table.client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl.get("TimeToLiveStatus") == "ENABLED"
    assert ttl.get("AttributeName") == definition.ttl_attribute == "ttl"
    await table.close()


async def test_a_missing_table_is_a_typed_error(dynamodb_local: DynamoDBLocal) -> None:
    from api.store.dynamodb import TableMissing
    from api.store.table import Key

    table = DynamoTable("never-created", load_definition(), endpoint_url=dynamodb_local.endpoint)
    with pytest.raises(TableMissing, match="create-table"):
        await table.get(Key("a", "b"))
    await table.close()
