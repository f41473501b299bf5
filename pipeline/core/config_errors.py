"""A config file's problems as the user reads them: every one at once, each with its key
path, and for a key the file's section does not know, the closest one it does."""

from __future__ import annotations

import difflib
from typing import get_args

from pydantic import BaseModel, ValidationError


def format_errors(path: str, exc: ValidationError, root: type[BaseModel]) -> str:
    """``exc`` (validating the file at ``path`` as ``root``) as lines: a count, then each
    problem at its key path."""
    lines = [f"{path}: {exc.error_count()} problem(s)"]
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {where}: {err['msg']}{_did_you_mean(err, root)}")
    return "\n".join(lines)


def _section_model(loc: tuple, root: type[BaseModel]) -> type[BaseModel] | None:
    """The settings model below ``root`` that holds the field at ``loc``
    (``("locations", 0, "x")``)."""
    model: object = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) \
                or part not in model.model_fields:
            return None
        model = model.model_fields[part].annotation
        while get_args(model) and not (isinstance(model, type) and issubclass(model, BaseModel)):
            model = next((a for a in get_args(model)
                          if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _did_you_mean(err: dict, root: type[BaseModel]) -> str:
    """For a key the config does not know, the closest one it does (as click does for a
    mistyped option)."""
    if err["type"] != "extra_forbidden" or not err["loc"]:
        return ""
    model = _section_model(tuple(err["loc"]), root)
    names = [f.alias or name for name, f in model.model_fields.items()] if model else []
    close = difflib.get_close_matches(str(err["loc"][-1]), names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
