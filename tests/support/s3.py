"""An S3 endpoint for the tests of exports: moto's server (a dev dependency), run as a process
on a free loopback port, as DynamoDB Local is; never moto's in-process mocks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3

from ddbkeys._local import holds_port

MOTO_SERVER = Path(sys.executable).with_name("moto_server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server on a free port until the block ends; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
                # (another worker's moto server may have taken the port first: not ours)
                if holds_port(process.pid, port) is not False:
                    break
                raise OSError(f"{url} answers from another process")
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start on {url}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def s3_client(url: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def upload(s3: Any, bucket: str, root: Path) -> None:
    """Every file below ``root`` to ``bucket``, at its path below ``root``."""
    for path in root.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, path.relative_to(root).as_posix())


def environ_for(url: str) -> dict[str, str]:
    """What points boto3's S3 clients (the CLI's) at ``url``."""
    return {**os.environ, "AWS_ENDPOINT_URL_S3": url}
