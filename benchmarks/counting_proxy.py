"""A counting proxy in a process of its own, for benchmarks whose clients run many threads.

:class:`~ddbkeys.testing.FaultProxy` forwards every request to DynamoDB and counts it by
operation, as the server sees it (a resent request and a cancelled transaction count like any
other). Run in the benchmark's own process, its threads would share the clients' interpreter lock
and slow them; here it runs in a child process, and :class:`CountingProxy` asks it for its counts
over a pipe.

    with CountingProxy(endpoint) as proxy:
        client = make_client(endpoint_url=proxy.endpoint_url)
        ...
        writes = proxy.writes()
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from types import TracebackType

#: The operations that write (what "write requests" counts).
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})

_SERVE = """
import json, sys
from collections import Counter
from ddbkeys.testing import FaultProxy
with FaultProxy(sys.argv[1]) as proxy:
    print(proxy.endpoint_url, flush=True)
    for line in sys.stdin:
        if line.strip() == "counts":
            seen = Counter()
            for (operation, _), n in proxy.counts_by_operation.items():
                seen[operation] += n
            print(json.dumps(seen), flush=True)
        elif line.strip() == "reset":
            proxy.reset()
            print("{}", flush=True)
"""


class CountingProxy:
    """A :class:`~ddbkeys.testing.FaultProxy` that forwards everything, in a child process."""

    def __init__(self, upstream_url: str) -> None:
        self.upstream_url = upstream_url
        self._child: subprocess.Popen[str] | None = None
        self.endpoint_url = ""

    def start(self) -> CountingProxy:
        self._child = subprocess.Popen(
            [sys.executable, "-c", _SERVE, self.upstream_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._child.stdout is not None
        self.endpoint_url = self._child.stdout.readline().strip()
        if not self.endpoint_url.startswith("http://"):
            raise RuntimeError(f"the counting proxy did not start: {self.endpoint_url!r}")
        return self

    def _ask(self, what: str) -> dict[str, int]:
        child = self._child
        assert child is not None and child.stdin is not None and child.stdout is not None
        child.stdin.write(what + "\n")
        child.stdin.flush()
        answer: dict[str, int] = json.loads(child.stdout.readline())
        return answer

    def counts(self) -> Counter[str]:
        """Requests forwarded since the last :meth:`reset`, by operation."""
        return Counter(self._ask("counts"))

    def writes(self) -> int:
        """Write requests forwarded since the last :meth:`reset`."""
        return sum(n for operation, n in self.counts().items() if operation in WRITES)

    def reset(self) -> None:
        self._ask("reset")

    def stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            assert child.stdin is not None
            child.stdin.close()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
