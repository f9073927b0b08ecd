"""The allocator's decisions that ``ddbkeys.ids.blocks`` used to give: still there, warning."""

from __future__ import annotations

import pytest

from ddbkeys.ids import blocks, blocks_core, blocks_steps


@pytest.mark.parametrize("name", sorted(blocks._MOVED))
def test_a_moved_name_warns_and_is_the_cores(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"ddbkeys\.ids\.blocks\.{name} .*blocks_core"):
        assert getattr(blocks, name) is getattr(blocks_core, name)


def test_the_modules_own_names_do_not_warn_and_others_are_missing() -> None:
    from ddbkeys.ids.blocks import EXIT_TIMEOUT, BlockAllocator, BlockStats, CloseReport  # noqa: PLC0415 (the import is the check)

    assert EXIT_TIMEOUT == 5.0 and BlockAllocator.__module__ == "ddbkeys.ids.blocks"
    assert BlockStats is blocks_steps.BlockStats and CloseReport is blocks_steps.CloseReport
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        blocks.Nothing  # noqa: B018


def test_a_star_import_still_gives_every_name_it_gave_warning_for_the_moved() -> None:
    space: dict[str, object] = {}
    with pytest.warns(DeprecationWarning) as warned:
        exec("from ddbkeys.ids.blocks import *", space)
    given = {name for name in space if not name.startswith("__")}
    assert given == set(blocks.__all__) and given > blocks._MOVED
    assert {str(w.message).split()[0] for w in warned} == {
        f"ddbkeys.ids.blocks.{name}" for name in blocks._MOVED
    }
