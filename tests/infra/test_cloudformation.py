"""infra/template.yaml deployed into moto's CloudFormation makes the table the app expects.

moto runs as a server (the `moto_server` fixture): the store sends its own HTTP requests,
which moto's in-process patching of botocore would not see. Each test deploys a stack of
its own, under names of its own.

The app never creates the table in production (CREATE_TABLE=false); these tests check that the
table the template makes is the one `load_definition()` describes, and that the store works on
it as deployed. moto's CloudFormation ignores the table's TimeToLiveSpecification, so TTL
is checked on the tables the app creates (tests/store/test_table_creation.py).
"""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from api.queue import sqs as sqs_adapter
from api.queue.sqs import SqsQueue
from api.store.definition import TEMPLATE_PATH, load_definition
from api.store.dynamodb import DynamoTable
from api.store.table import ConditionFailed, ItemAbsent, Key

REGION = "us-east-1"

# moto's CloudFormation has no AWS::SecretsManager::Secret: it warns and skips the secrets,
# so nothing here checks them.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Tried to parse AWS.{2}SecretsManager.{2}Secret:UserWarning"
)


@dataclass(frozen=True)
class Stack:
    name: str
    table: str  # the TableName parameter
    status: str
    outputs: dict[str, str]
    endpoint: str  # moto's

    def client(self, service: str) -> Any:
        """A boto3 client of moto's server (its type is the service's, which mypy cannot
        tell from a variable)."""
        make: Any = boto3.client
        return make(service, region_name=REGION, endpoint_url=self.endpoint)


@pytest.fixture
def stack(moto_server: str) -> Iterator[Stack]:
    name = f"agent-memory-test-{uuid.uuid4().hex[:8]}"
    table = f"agent-memory-cfn-{uuid.uuid4().hex[:8]}"
    cfn = boto3.client("cloudformation", region_name=REGION, endpoint_url=moto_server)
    cfn.create_stack(
        StackName=name,
        TemplateBody=TEMPLATE_PATH.read_text(encoding="utf-8"),
        Parameters=[{"ParameterKey": "TableName", "ParameterValue": table}],
        Capabilities=["CAPABILITY_IAM"],  # the template makes a managed policy
    )
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    described = cfn.describe_stacks(StackName=name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    yield Stack(name, table, described["StackStatus"], outputs, moto_server)
    cfn.delete_stack(StackName=name)  # moto's server lives as long as the test run


def _key_schema(schema: Any) -> dict[str, str]:
    return {k["AttributeName"]: k["KeyType"] for k in schema}


def test_stack_outputs_name_the_table(stack: Stack) -> None:
    assert stack.status == "CREATE_COMPLETE"
    assert stack.outputs["TableName"] == stack.table
    assert stack.outputs["TableArn"].endswith(f":table/{stack.table}")
    assert stack.outputs["ConfigurationPath"] == f"/{stack.name}/"


async def test_store_round_trip_on_the_deployed_table(stack: Stack) -> None:
    table = DynamoTable(
        stack.outputs["TableName"], load_definition(), region=REGION, endpoint_url=stack.endpoint
    )
    try:
        await table.ping()
        item = {"pk": "u#1", "sk": "a#1", "name": "Ada", "gsi1pk": "o#1", "gsi1sk": "2024-01-02"}
        await table.put(item)
        await table.put(
            {"pk": "u#1", "sk": "a#2", "name": "Bo", "gsi1pk": "o#1", "gsi1sk": "2024-01-01"}
        )
        await table.put({"pk": "u#1", "sk": "a#3", "name": "not indexed"})

        assert await table.get(Key("u#1", "a#1")) == item

        page = await table.query("o#1", index="gsi1")
        assert [i["name"] for i in page.items] == ["Bo", "Ada"]
        assert page.cursor is None

        with pytest.raises(ConditionFailed):
            await table.put({**item, "name": "Eve"}, condition=ItemAbsent())
        assert await table.get(Key("u#1", "a#1")) == item
    finally:
        await table.close()


def test_table_has_the_definitions_keys_and_indexes(stack: Stack) -> None:
    expected = load_definition().create_table_params(stack.table)
    described = stack.client("dynamodb").describe_table(TableName=stack.table)
    actual = described["Table"]

    assert _key_schema(actual["KeySchema"]) == _key_schema(expected["KeySchema"])
    assert sorted(
        (a["AttributeName"], a["AttributeType"]) for a in actual["AttributeDefinitions"]
    ) == sorted((a["AttributeName"], a["AttributeType"]) for a in expected["AttributeDefinitions"])
    assert actual["BillingModeSummary"]["BillingMode"] == expected["BillingMode"]

    def indexes(gsis: Any) -> dict[str, tuple[dict[str, str], str]]:
        return {
            g["IndexName"]: (_key_schema(g["KeySchema"]), g["Projection"]["ProjectionType"])
            for g in gsis
        }

    assert indexes(actual["GlobalSecondaryIndexes"]) == indexes(expected["GlobalSecondaryIndexes"])
    # the round trip above queries this index by these attributes
    definition_indexes = {i.name: (i.pk, i.sk) for i in load_definition().indexes}
    assert definition_indexes == {"gsi1": ("gsi1pk", "gsi1sk")}


def test_ssm_parameters_configure_the_service(stack: Stack) -> None:
    ssm = stack.client("ssm")

    def parameter(name: str) -> str:
        value: str = ssm.get_parameter(Name=f"/{stack.name}/{name}")["Parameter"]["Value"]
        return value

    assert parameter("STORE") == "dynamodb"
    assert parameter("DYNAMODB_TABLE") == stack.table


async def test_the_memory_run_queue_is_fifo_with_a_dead_letter_queue(stack: Stack) -> None:
    """The queue the template makes is one the app's SQS adapter works with: FIFO, runs of
    one agent in order, a run received too often moved to the dead-letter queue."""
    sqs = stack.client("sqs")
    url = stack.outputs["MemoryRunQueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["FifoQueue"] == "true"
    assert (
        int(json.loads(attributes["RedrivePolicy"])["maxReceiveCount"]) == sqs_adapter.MAX_RECEIVES
    )
    ssm = stack.client("ssm")
    assert ssm.get_parameter(Name=f"/{stack.name}/SQS_QUEUE_URL")["Parameter"]["Value"] == url
    assert ssm.get_parameter(Name=f"/{stack.name}/MEMORY_QUEUE")["Parameter"]["Value"] == "sqs"

    queue = SqsQueue(sqs, url)
    try:
        await queue.send("agent-1", "run-1")
        await queue.send("agent-1", "run-2")
        (first,) = await queue.receive(wait_seconds=0)
        assert (first.group, first.run_id) == ("agent-1", "run-1")
        assert await queue.receive(wait_seconds=0) == []  # its group waits for it
        await queue.ack(first)
        (second,) = await queue.receive(wait_seconds=0)
        assert second.run_id == "run-2"
        await queue.ack(second)
    finally:
        await queue.aclose()


def queue_settings(sqs: Any, url: str) -> dict[str, object]:
    """What matters of a memory-run queue and of its dead-letter queue."""
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    redrive = json.loads(attributes["RedrivePolicy"])
    dead_name = redrive["deadLetterTargetArn"].rsplit(":", 1)[1]
    dead_url = sqs.get_queue_url(QueueName=dead_name)["QueueUrl"]
    dead = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["All"])["Attributes"]
    return {
        "FifoQueue": attributes["FifoQueue"],
        "ContentBasedDeduplication": attributes["ContentBasedDeduplication"],
        "VisibilityTimeout": int(attributes["VisibilityTimeout"]),
        "maxReceiveCount": int(redrive["maxReceiveCount"]),
        "dead FifoQueue": dead["FifoQueue"],
        "dead MessageRetentionPeriod": int(dead["MessageRetentionPeriod"]),
    }


def test_the_template_makes_the_queues_the_code_makes(stack: Stack) -> None:
    """The queue settings are written twice (the template for deployments, create_queues
    for tests and first deployments): both make the same queues, with the code's values."""
    sqs = stack.client("sqs")
    deployed = queue_settings(sqs, stack.outputs["MemoryRunQueueUrl"])
    made = queue_settings(
        sqs, sqs_adapter.create_queues(sqs, f"made-by-the-code-{uuid.uuid4().hex[:8]}")
    )
    assert deployed == made
    assert made == {
        "FifoQueue": "true",
        "ContentBasedDeduplication": "false",
        "VisibilityTimeout": sqs_adapter.VISIBILITY_SECONDS,
        "maxReceiveCount": sqs_adapter.MAX_RECEIVES,
        "dead FifoQueue": "true",
        "dead MessageRetentionPeriod": sqs_adapter.DEAD_LETTER_RETENTION_SECONDS,
    }
