"""The one table: a port (table.py) with a DynamoDB and an embedded SQLite adapter."""

from api.config import Settings
from api.kit.clock import Clock
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from api.store.table import Table


def build_table(settings: Settings, clock: Clock | None = None) -> Table:
    """The adapter the settings choose."""
    definition = load_definition()
    if settings.store == "dynamodb":
        from api.store.dynamodb import DynamoTable  # boto3 only where it is used

        endpoint = str(settings.dynamodb_endpoint) if settings.dynamodb_endpoint else None
        return DynamoTable(
            settings.dynamodb_table,
            definition,
            region=settings.aws_region,
            endpoint_url=endpoint,
            clock=clock,
        )
    return SqliteTable(settings.sqlite_path, settings.dynamodb_table, definition, clock=clock)
