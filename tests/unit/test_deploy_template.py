"""deploy/marker-handler.yaml: it passes cfn-lint, and it holds the settings the handler's
promises rest on (a tumbling window, one batch a shard at a time, from the stream's oldest
record, partial batch failures reported, retries bounded, least privilege)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ddbkeys.iam import policy
from ddbkeys.partition_keys import aws_lambda
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._index.state import STATE_TABLE

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "marker-handler.yaml"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    # PyYAML comes with cfn-lint (the dev extra). The template uses no short tags (!Ref...),
    # so a plain YAML reader loads it.
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[dev]')")
    loaded: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    return loaded


def resource(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]
    properties: dict[str, Any] = found
    return properties


def test_cfn_lint_finds_nothing() -> None:
    if importlib.util.find_spec("cfnlint") is None:
        pytest.skip("cfn-lint is not installed (it is in the dev extra: pip install -e '.[dev]')")
    command = Path(sys.executable).with_name("cfn-lint")
    found = str(command) if command.exists() else shutil.which("cfn-lint")
    assert found, "cfn-lint is importable but its command is not on PATH"
    result = subprocess.run(
        [found, "--info", str(TEMPLATE)], capture_output=True, text=True, timeout=300, check=False
    )
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_the_trigger_holds_what_the_handlers_evidence_needs(template: dict[str, Any]) -> None:
    trigger = resource(template, "AWS::Lambda::EventSourceMapping")
    assert trigger["EventSourceArn"] == {"Ref": "TableStreamArn"}
    assert trigger["FunctionName"] == {"Ref": "Function"}
    assert trigger["StartingPosition"] == "TRIM_HORIZON"
    assert trigger["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # Only an event from a tumbling window carries shardId (0 would mean no window).
    assert 1 <= trigger["TumblingWindowInSeconds"] <= 900
    assert trigger["ParallelizationFactor"] == 1
    assert trigger["BisectBatchOnFunctionError"] is True
    assert 0 <= trigger["MaximumRetryAttempts"] <= 100  # bounded (-1 would be forever)
    assert trigger["MaximumRecordAgeInSeconds"] == -1  # never dropped for its age alone
    on_failure = trigger["DestinationConfig"]["Fn::If"]
    assert on_failure[0] == "HasOnFailureQueue"
    assert on_failure[1] == {"OnFailure": {"Destination": {"Ref": "OnFailureQueueArn"}}}


def test_the_function_runs_the_handler_with_the_settings_it_reads(
    template: dict[str, Any],
) -> None:
    function = resource(template, "AWS::Lambda::Function")
    module, name = function["Handler"].rsplit(".", 1)
    assert (module, name) == (aws_lambda.__name__, "handler")
    assert callable(aws_lambda.handler)
    assert function["Runtime"] == {"Ref": "Runtime"}
    runtimes = template["Parameters"]["Runtime"]
    assert set(runtimes["AllowedValues"]) == declared_pythons()
    assert runtimes["Default"] in runtimes["AllowedValues"]
    assert function["Code"] == {"S3Bucket": {"Ref": "CodeS3Bucket"}, "S3Key": {"Ref": "CodeS3Key"}}
    variables = function["Environment"]["Variables"]
    assert variables == {
        "DDBKEYS_INDEX": {"Ref": "IndexName"},
        "DDBKEYS_MARKER_ATTRIBUTE": {"Ref": "MarkerAttribute"},
        "DDBKEYS_MARKER_SORT_KEY": {"Ref": "MarkerSortKey"},
        "DDBKEYS_STATE_TABLE": {"Ref": "StateTableName"},
    }
    # The handler reads each of them (its one handler per execution environment is made
    # with these settings and boto3's default client: tests/transport/test_lambda_handler.py).
    settings = {
        "DDBKEYS_INDEX": "ix",
        "DDBKEYS_MARKER_ATTRIBUTE": "m",
        "DDBKEYS_MARKER_SORT_KEY": "AQE=",
        "DDBKEYS_STATE_TABLE": "st",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in settings.items():
            patch.setenv(name, value)
        read = aws_lambda.environment_settings()
        patch.setenv("DDBKEYS_MARKER_SORT_KEY", "")  # (the template's default: the type's)
        unset = aws_lambda.environment_settings()["marker_sort_key"]
    assert read == {
        "index_name": "ix",
        "marker_attribute": "m",
        "marker_sort_key": "AQE=",
        "state_table": "st",
    }
    assert unset is None
    parameters = template["Parameters"]
    defaults = {p: parameters[p].get("Default") for p in parameters}
    assert defaults["IndexName"] == DEFAULT_INDEX
    assert defaults["MarkerAttribute"] == DEFAULT_MARKER_ATTRIBUTE
    assert defaults["StateTableName"] == STATE_TABLE
    for required in ("TableName", "TableStreamArn", "CodeS3Bucket", "CodeS3Key"):
        assert defaults[required] is None, f"{required} has no default: the deployer gives it"


def test_the_role_grants_what_iam_policy_lambda_handler_prints(template: dict[str, Any]) -> None:
    """The same statements (by Sid) and actions; the resources differ only in how they are
    written (the template's stream is the one stream it triggers on)."""
    (inline,) = resource(template, "AWS::IAM::Role")["Policies"]
    granted = statements(inline["PolicyDocument"])
    dynamodb = {s["Sid"]: s["Action"] for s in granted if s["Sid"].startswith("Ddbkeys")}
    printed = policy("lambda-handler", "orders")["Statement"]
    assert dynamodb == {s["Sid"]: s["Action"] for s in printed}
    assert dynamodb["DdbkeysTriggers"] == ["lambda:ListEventSourceMappings"]
    others = {s["Sid"]: s["Action"] for s in granted if s["Sid"] not in dynamodb}
    assert others == {
        "Logs": ["logs:CreateLogStream", "logs:PutLogEvents"],  # on its own log group
        "OnFailureQueue": ["sqs:SendMessage"],  # when there is one
    }
    resources = {s["Sid"]: s["Resource"] for s in granted}
    assert resources["DdbkeysStream"] == {"Ref": "TableStreamArn"}
    assert resources["Logs"] == {"Fn::GetAtt": ["LogGroup", "Arn"]}


def test_the_role_grants_nothing_on_everything(template: dict[str, Any]) -> None:
    (inline,) = resource(template, "AWS::IAM::Role")["Policies"]
    for statement in statements(inline["PolicyDocument"]):
        assert statement["Effect"] == "Allow"
        assert not any(a.endswith(":*") or a == "*" for a in statement["Action"]), statement
        if statement["Resource"] == "*":  # IAM grants these two on * only
            assert statement["Action"] in (
                ["dynamodb:ListStreams"],
                ["lambda:ListEventSourceMappings"],
            )


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The policy's statements, the conditional ones (Fn::If) as if their condition held."""
    return [s["Fn::If"][1] if "Fn::If" in s else s for s in document["Statement"]]


def declared_pythons() -> set[str]:
    """The Lambda runtimes of the Pythons the package declares (its classifiers)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    prefix = "Programming Language :: Python :: 3."
    found = {
        "python3." + c.removeprefix(prefix)
        for c in project["classifiers"]
        if c.startswith(prefix) and c.removeprefix(prefix).isdigit()
    }
    assert "python3.13" in found
    return found
