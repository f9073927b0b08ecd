"""The read-through attribute that public classes use over their plan or state."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ddbkeys._core.reads import Settable, Through


@dataclass
class Plan:
    width: int
    poll: float


class Public:
    width: Through[int] = Through("core", "How wide.")
    poll: Settable[float] = Settable("core")

    def __init__(self, plan: Plan) -> None:
        self.core = plan


def test_reads_the_holders_value_at_each_read() -> None:
    public = Public(Plan(width=3, poll=1.0))
    assert public.width == 3
    public.core.width = 5
    assert public.width == 5


def test_read_only_unless_settable() -> None:
    public = Public(Plan(width=3, poll=1.0))
    with pytest.raises(AttributeError, match=r"Public\.width is read-only"):
        public.width = 4  # type: ignore[assignment]
    with pytest.raises(AttributeError, match=r"Public\.width is read-only"):
        del public.width
    assert public.core.width == 3 and "width" not in vars(public)
    public.poll = 2.5
    assert public.core.poll == 2.5 and public.poll == 2.5


def test_the_class_shows_the_descriptor_and_its_doc() -> None:
    descriptor = Public.width
    assert isinstance(descriptor, Through) and descriptor.__doc__ == "How wide."
    assert descriptor.name == "width" and descriptor.holder == "core"
