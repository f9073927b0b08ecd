"""What a user of the package faces sees in a signature, walked as a new user would
(issue 34): no parameter a user must not pass (``Usage(_lock=...)`` was one: a dataclass field
left in ``__init__``), no ``plan`` that is not a listing split into tasks (``FaultProxy(url,
plan=Faults(...))`` kept the word after ``FaultPlan`` became ``Faults``), and the one public
value a worker of another process may send back, ``Usage``, pickles. No client: signatures and
values only."""

from __future__ import annotations

import importlib
import inspect
import pickle
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from ddbkeys import ConfigurationError, Usage

FACES = (
    "ddbkeys",
    "ddbkeys.aio",
    "ddbkeys.ids",
    "ddbkeys.partition_keys",
    "ddbkeys.partition_keys.aws_lambda",
    "ddbkeys.iam",
    "ddbkeys.testing",
    "ddbkeys.engines.dask",
    "ddbkeys.engines.spark",
)


def _face(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ConfigurationError:  # an engine whose extra is not installed
        return None


def _callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Each public class (its constructor) and its public methods, and each public function,
    of every face, by face and qualified name."""
    for face in FACES:
        module = _face(face)
        if module is None:
            continue
        for public in module.__all__:
            value = getattr(module, public)
            if inspect.isclass(value):
                yield f"{face}.{value.__qualname__}", value
                for attr, member in inspect.getmembers(value):
                    if not attr.startswith("_") and inspect.isfunction(member):
                        yield f"{face}.{value.__qualname__}.{attr}", member
            elif callable(value):
                yield f"{face}.{public}", value


def _parameters(target: Callable[..., Any]) -> list[str]:
    try:
        return list(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # (a builtin without a signature)
        return []


def test_no_public_signature_takes_a_private_parameter() -> None:
    private = {
        f"{where}({parameter}=)"
        for where, target in _callables()
        for parameter in _parameters(target)
        if parameter.startswith("_")
    }
    assert private == set()


def test_plan_is_only_a_listing_split_into_tasks() -> None:
    """ "plan" means one thing (issue 34): what ``plan_listing`` returns. A setting or a value of
    another kind under that name is refused here."""
    named_plan = {
        f"{where}({parameter}=)"
        for where, target in _callables()
        for parameter in _parameters(target)
        if parameter == "plan"
    }
    assert named_plan == set()


def test_the_fault_proxy_takes_its_faults_by_their_name() -> None:
    from ddbkeys.testing import Fault, FaultProxy, Faults  # noqa: PLC0415

    proxy = FaultProxy("http://127.0.0.1:1", faults=Faults(script=[Fault.THROTTLE]))
    assert proxy.decide("GetItem") is Fault.THROTTLE
    proxy.set_faults(faults=Faults(error_500=1.0))
    assert proxy.decide("GetItem") is Fault.ERROR_500


def test_usage_takes_only_its_totals() -> None:
    assert list(inspect.signature(Usage).parameters) == [
        "requests",
        "items",
        "read_units",
        "write_units",
        "retries",
        "conflicts",
        "billed_write_units",
    ]
    with pytest.raises(TypeError):
        Usage(_lock=None)  # type: ignore[call-arg]


#: Run in a fresh interpreter: unpickle a Usage, count into it (its lock works), send it back.
CHILD = """
import pickle, sys
usage = pickle.loads(sys.stdin.buffer.read())
usage.count(retries=2, conflicts=1)
sys.stdout.buffer.write(pickle.dumps(usage))
"""


def test_a_usage_travels_to_another_process_and_back() -> None:
    usage = Usage(requests=3, items=7, read_units=1.5, write_units=2.0, billed_write_units=4.0)
    back = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=pickle.dumps(usage),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert back.returncode == 0, back.stderr.decode()[-2000:]
    again = pickle.loads(back.stdout)
    assert isinstance(again, Usage)
    assert again.snapshot() == {**usage.snapshot(), "retries": 2, "conflicts": 1}
    again.count(retries=1)  # a lock of its own
    assert again.retries == 3 and usage.retries == 0


@pytest.mark.parametrize("face", ["ddbkeys", "ddbkeys.aio"])
def test_a_face_that_loads_on_first_use_lists_every_name(face: str) -> None:
    """``dir()`` (an editor's completion, ``help()``) shows the names a face loads on first
    use: before, ``dir(ddbkeys)`` had no AtomicCounter, MarkerIndex or distinct_partition_keys
    and ``help(ddbkeys)`` listed only the errors among its classes."""
    module = importlib.import_module(face)
    assert set(module.__all__) - set(dir(module)) == set()


#: Where a sync name and its asyncio form return different things by nature: (name, method).
ASYNC_RETURNS_OTHER = {
    ("Listing", "raw"): "the asyncio form's keys iterate in one event loop",
    ("ExportListing", "raw"): "the asyncio form's keys iterate in one event loop",
    ("make_client", None): "an aiobotocore client is entered (async with)",
    ("distinct_partition_keys", None): "an AsyncListing",
}


def _returns(target: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(target).return_annotation)
    except (TypeError, ValueError):
        return ""


def test_the_asyncio_forms_return_what_the_sync_ones_do() -> None:
    """One name per idea in both forms: the asyncio ``StateStore.load`` returned an
    ``IndexState``, a second name of the sync one's ``Evidence``."""
    import ddbkeys  # noqa: PLC0415
    import ddbkeys.aio  # noqa: PLC0415

    differ = set()
    for name in ddbkeys.aio.__all__:
        async_form, sync_form = getattr(ddbkeys.aio, name), getattr(ddbkeys, name, None)
        if sync_form is None:
            continue
        pairs: list[tuple[str | None, Any, Any]] = [(None, async_form, sync_form)]
        if inspect.isclass(async_form):
            pairs = [
                (method, getattr(async_form, method), getattr(sync_form, method))
                for method in dir(async_form)
                if not method.startswith("_")
                and hasattr(sync_form, method)
                and inspect.isfunction(getattr(async_form, method))
            ]
        for method, a, s in pairs:
            if (name, method) not in ASYNC_RETURNS_OTHER and _returns(a) != _returns(s):
                differ.add(f"{name}.{method}: {_returns(s)} / {_returns(a)}")
    assert differ == set()


@pytest.mark.parametrize("face", ["ddbkeys.partition_keys", "ddbkeys.ids"])
def test_a_sub_face_exports_what_ddbkeys_takes_from_it(face: str) -> None:
    """``from ddbkeys.partition_keys import parse_event, MalformedEventError`` works: the
    partition_keys face lacked MalformedEventError (what parse_event raises), StateStore,
    reconcile and UnsettledError, which ``ddbkeys`` exports from it (a docs page imported
    parse_event from one face and its error from the other)."""
    import ddbkeys  # noqa: PLC0415

    module = importlib.import_module(face)
    taken = {
        name
        for name in ddbkeys.__all__
        if (getattr(getattr(ddbkeys, name), "__module__", None) or "").startswith(face + ".")
    }
    assert taken  # the check below checks something
    assert taken - set(module.__all__) == set()


PRIVATE_PATH = re.compile(r"ddbkeys(?:\.\w+)*\._\w+")


def test_a_faces_own_help_names_no_private_module() -> None:
    """``help()`` of a face, and of what the face module defines itself, sends a reader to
    public names only: ddbkeys.testing's sent them to ddbkeys.testing._plugin, ddbkeys.aio's to
    ddbkeys._core and ddbkeys._drivers.aio, the engines' to ddbkeys._capacity.Usage.merge and
    ddbkeys.partition_keys._tasks.tasks."""
    named = set()
    for face in (*FACES, "ddbkeys.engines"):
        module = _face(face)
        if module is None:
            continue
        own = [module] + [
            value
            for value in vars(module).values()
            if getattr(value, "__module__", None) == face and inspect.isfunction(value)
        ]
        for value in own:
            for path in PRIVATE_PATH.findall(inspect.getdoc(value) or ""):
                named.add(f"{getattr(value, '__qualname__', face)}: {path}")
    assert named == set()
