"""``import ddbkeys`` works where POSIX-only modules do not exist (Windows has no ``fcntl``)."""

from __future__ import annotations

import subprocess
import sys

HIDE = "import sys; sys.modules['fcntl'] = None; sys.modules['termios'] = None; "


def test_import_without_fcntl() -> None:
    code = (
        HIDE + "import ddbkeys, ddbkeys.ids, ddbkeys.partition_keys, ddbkeys._cli; "
        "from ddbkeys import DynamoDBLocal, make_client; print(ddbkeys.__version__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == __import__("ddbkeys").__version__


def test_every_public_error_is_importable_from_ddbkeys() -> None:
    """Every DdbKeysError subclass the package defines can be imported from ``ddbkeys``."""
    import ddbkeys  # noqa: PLC0415
    import ddbkeys.ids  # noqa: PLC0415
    import ddbkeys.partition_keys  # noqa: PLC0415

    def subclasses(cls: type) -> set[type]:
        found: set[type] = set(cls.__subclasses__())
        for sub in list(found):
            found |= subclasses(sub)
        return found

    public = {
        c
        for c in subclasses(ddbkeys.DdbKeysError)
        if c.__module__.startswith("ddbkeys.") and not c.__name__.startswith("_")
    }
    assert public, "no error classes found"
    for error in public:
        assert getattr(ddbkeys, error.__name__) is error
        assert error.__name__ in ddbkeys.__all__
    from ddbkeys import ItemExistsError, MarkerClashError  # noqa: PLC0415

    assert issubclass(ItemExistsError, ddbkeys.DdbKeysError)
    assert issubclass(MarkerClashError, ddbkeys.DdbKeysError)


def test_the_main_names_are_importable_from_ddbkeys_as_from_ddbkeys_aio() -> None:
    """``from ddbkeys import AtomicCounter`` works (a newcomer's first line), for every name
    ``ddbkeys.aio`` has, and ``import ddbkeys`` alone loads none of them."""
    code = (
        "import sys, ddbkeys, ddbkeys.aio; "
        "print(sorted(m for m in ('ddbkeys.ids', 'ddbkeys.partition_keys') if m in sys.modules)); "
        "from ddbkeys import AtomicCounter, distinct_partition_keys; "
        "from ddbkeys.ids import AtomicCounter as home; "
        "import ddbkeys.partition_keys as face; "
        "print(AtomicCounter is home, distinct_partition_keys is face.distinct_partition_keys)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True True"]
    import ddbkeys  # noqa: PLC0415
    import ddbkeys.aio  # noqa: PLC0415

    for name in set(ddbkeys.aio.__all__) - {"AsyncListing", "AsyncExportListing"}:
        assert name in ddbkeys.__all__, name
        value = getattr(ddbkeys, name)
        assert getattr(value, "__name__", name) == name, name
