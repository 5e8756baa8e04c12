"""Values as applications have them, turned into field text.

The native send path stores ``str``, ``bytes``, ``bool``, ``int`` and ``float`` itself and calls
the function :func:`converter` builds only for anything else, so the common record never runs
this code. What each kind becomes:

- ``dict``, ``list``, ``tuple``, ``set``: compact JSON (``{"a":1}``), non-ASCII kept as is,
  with the rules below applied inside;
- ``None``: ``null``;
- ``datetime``, ``date``, ``time``: ISO 8601 (``isoformat()``);
- ``UUID``, ``Decimal``, ``Path``: their text (``str``);
- ``Enum``: its value, converted by these same rules;
- an exception: ``Type: message``;
- ``bytearray``, ``memoryview``: their bytes;
- anything else: ``default(value)`` when the producer was given ``default=`` (as
  ``json.dumps`` takes it; its result is converted again), else a ``TypeError`` naming the
  field and the type.

Runs on the thread that calls ``send``; raises (naming the field) rather than storing
something the caller did not ask for.
"""

from __future__ import annotations

import datetime as _datetime
import decimal
import enum
import json
import pathlib
import traceback
import uuid
from collections.abc import Callable
from typing import Any

_MISSING = object()

Default = Callable[[Any], Any]


def _plain(value: Any) -> Any:
    """The text of a value of a known kind, or ``_MISSING``."""
    if value is None:
        return "null"
    if isinstance(value, (_datetime.datetime, _datetime.date, _datetime.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    if isinstance(value, BaseException):
        return "".join(traceback.format_exception_only(type(value), value)).strip()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return _MISSING


def converter(default: Default | None = None) -> Callable[[Any, Any], str | bytes]:
    """``convert(key, value)`` for the native producer; see the module text."""

    def in_json(value: Any) -> Any:
        # json.dumps's own `default`: what JSON has no form for.
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, (set, frozenset)):
            return list(value)
        text = _plain(value)
        if text is not _MISSING:
            return text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if default is not None:
            return default(value)
        raise TypeError(f"{type(value).__name__} has no text form")

    def convert(key: Any, value: Any, depth: int = 0) -> str | bytes:
        if isinstance(value, (str, bytes)):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return repr(value) if isinstance(value, float) else str(value)
        text = _plain(value)
        if text is not _MISSING:
            return text  # type: ignore[no-any-return]
        if isinstance(value, enum.Enum):
            return convert(key, value.value, depth)
        if isinstance(value, (dict, list, tuple, set, frozenset)):
            try:
                return json.dumps(list(value) if isinstance(value, (set, frozenset)) else value,
                                  separators=(",", ":"), ensure_ascii=False, default=in_json)
            except (TypeError, ValueError) as error:
                raise TypeError(f"value of field {key!r} cannot be written as JSON: {error}") from error
        if default is None:
            raise TypeError(f"value of field {key!r} is a {type(value).__name__}, which has no text form; "
                            "pass default= to the producer to convert it")
        if depth > 4:
            raise TypeError(f"value of field {key!r}: default= keeps returning values without a text form")
        try:
            converted = default(value)
        except Exception as error:
            raise TypeError(f"value of field {key!r}: default= raised {type(error).__name__}: {error}") from error
        return convert(key, converted, depth + 1)

    return convert
