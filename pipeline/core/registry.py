"""Declarations found by where they live: each module (or sub-package) of a package that
declares one under an agreed name, so adding one is adding its module, not editing a list."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def declared(package: str, name: str, kind: type[T], order: Callable[[T], object]
             ) -> tuple[T, ...]:
    """Every ``kind`` that a module directly inside ``package`` binds to ``name``, in
    ``order``; a module without one is no declaration (a helper)."""
    found = []
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        value = getattr(importlib.import_module(f"{package}.{module.name}"), name, None)
        if isinstance(value, kind):
            found.append(value)
    return tuple(sorted(found, key=order))
