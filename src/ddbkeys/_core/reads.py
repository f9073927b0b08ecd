"""Attributes read through to another object: a public class over its core or state."""

from __future__ import annotations

from typing import Any, Generic, NoReturn, TypeVar, overload

T = TypeVar("T")


class Through(Generic[T]):
    """A read-only attribute that reads the same name on ``self.<holder>``.

    ``width: Through[int] = Through("core")`` in a class body reads ``self.core.width``, as a
    ``@property`` returning it would. Assigning to it or deleting it is an AttributeError (and
    a type checker flags an assignment); :class:`Settable` is one that sets it too.
    """

    def __init__(self, holder: str, doc: str | None = None) -> None:
        self.holder, self.name, self.__doc__ = holder, "", doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Through[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.holder), self.name)

    def __set__(self, obj: object, value: NoReturn) -> None:
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only")

    def __delete__(self, obj: object) -> None:
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only")


class Settable(Through[T]):
    """A :class:`Through` that assigning sets on the holder (``self.<holder>.<name>``)."""

    def __set__(self, obj: object, value: T) -> None:
        setattr(getattr(obj, self.holder), self.name, value)
