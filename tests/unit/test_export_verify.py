"""verify_export, the comparison of an export's markers with its data, without I/O."""

from __future__ import annotations

from ddbkeys.partition_keys._export.keys import ExportSnapshot
from ddbkeys.partition_keys._export.verify import verify_export


def h(*names: str) -> frozenset[tuple[str, str]]:
    return frozenset(("S", n) for n in names)


def test_missing_orphans_clashes_and_what_changed_since() -> None:
    snapshot = ExportSnapshot(
        time=0.0,
        data=h("a", "b", "c", "d", "e"),
        marked=h("a", "z", "y"),
        clashes=h("d"),
    )
    report = verify_export("t", "i", snapshot, {("S", "e"), ("S", "y")}, "as of then")
    assert report.missing == [{"S": "b"}, {"S": "c"}]
    assert report.clashes == [{"S": "d"}]
    assert report.orphans == [{"S": "z"}]
    assert report.not_compared == [{"S": "e"}, {"S": "y"}]
    assert (report.collections, report.markers, report.as_of) == (5, 3, "as of then")
    assert not report.healthy
    whole = verify_export("t", "i", ExportSnapshot(0.0, h("a"), h("a")), (), "now")
    assert whole.healthy and whole.not_compared == []
