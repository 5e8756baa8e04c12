"""Credentials providers, as Python libraries hand them out, made into the one shape the
native producer calls: a function returning ``(access_key_id, access_key_secret, token)``.

Accepted providers:

- a callable with no arguments;
- an object with ``get_credentials()`` (aliyun-log-python-sdk's providers) or
  ``get_credential()`` (alibabacloud-credentials' ``Client``).

What they return may be a ``(id, secret)`` or ``(id, secret, token)`` tuple, a mapping with
``access_key_id`` / ``access_key_secret`` / ``security_token`` (or ``AccessKeyId`` /
``AccessKeySecret`` / ``SecurityToken``), or an object with those attributes or with
``get_access_key_id()`` / ``get_access_key_secret()`` / ``get_security_token()`` methods.

The producer calls the provider on one of its I/O threads before every attempt to send (so a
token rotated between two retries is picked up), taking the GIL; a provider should answer
from its cache and refresh ahead of expiry, as the libraries above do. A provider that raises
or returns something else fails that attempt with ``CredentialsUnavailable``, which is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Triple = tuple[str, str, "str | None"]

_NAMES = (("access_key_id", "AccessKeyId"), ("access_key_secret", "AccessKeySecret"),
          ("security_token", "SecurityToken"))


def _field(answer: Any, names: tuple[str, str]) -> Any:
    if isinstance(answer, Mapping):
        for name in names:
            if name in answer:
                return answer[name]
        return None
    getter = getattr(answer, f"get_{names[0]}", None)
    if callable(getter):
        return getter()
    return getattr(answer, names[0], None)


def _triple(answer: Any) -> Triple:
    if isinstance(answer, (tuple, list)) and len(answer) in (2, 3):
        values = list(answer) + [None] * (3 - len(answer))
    else:
        values = [_field(answer, names) for names in _NAMES]
    key_id, secret, token = values
    if not isinstance(key_id, str) or not key_id or not isinstance(secret, str) or not secret:
        raise TypeError(f"the credentials provider returned {type(answer).__name__} without an access key id "
                        "and secret")
    return key_id, secret, token if isinstance(token, str) and token else None


def provider_function(provider: Any) -> Callable[[], Triple]:
    """The native producer's credentials function for ``provider``; ``TypeError`` if it is
    none of the accepted kinds."""
    for method in ("get_credentials", "get_credential"):
        get = getattr(provider, method, None)
        if callable(get):
            break
    else:
        if not callable(provider):
            raise TypeError("credentials_provider must be a callable or have get_credentials() or get_credential(), "
                            f"not {type(provider).__name__}")
        get = provider

    def credentials() -> Triple:
        return _triple(get())

    return credentials
