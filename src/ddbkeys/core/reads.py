"""Attributes read through to another object: a public class over its plan or state."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Through(Generic[T]):
    """A read-only attribute that reads the same name on ``self.<holder>``.

    ``width: Through[int] = Through("plan")`` in a class body reads ``self.plan.width``, as a
    ``@property`` returning it would; assigning to it is an AttributeError, as to a property,
    unless ``writable`` (then it sets ``self.plan.width``).
    """

    def __init__(self, holder: str, doc: str | None = None, *, writable: bool = False) -> None:
        self.holder, self.name, self.__doc__, self.writable = holder, "", doc, writable

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Through[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.holder), self.name)

    def __set__(self, obj: object, value: T) -> None:
        if not self.writable:
            raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only")
        setattr(getattr(obj, self.holder), self.name, value)
