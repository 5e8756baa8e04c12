"""Exceptions raised by loghose. All derive from :class:`LoghoseError`."""

from __future__ import annotations

from typing import Any


class LoghoseError(Exception):
    """Base class of every loghose error."""


class ConfigError(LoghoseError, ValueError):
    """An option is missing, unknown or out of range; the message names it."""


class InvalidRecordError(LoghoseError, ValueError):
    """A record the service would refuse (bad key, oversized value, ...); nothing was queued."""


class BufferFullError(LoghoseError, BufferError):
    """The producer's buffer is full; the record was not queued (and was counted as dropped)."""


class ProducerClosedError(LoghoseError):
    """The producer is closed; the record was not queued."""


class SpoolLockedError(LoghoseError):
    """Every slot of ``spool_dir`` is held by another producer (see ``spool_slots``); the message
    names the directory and a holder's pid."""


class DeliveryError(LoghoseError):
    """A record's batch was not delivered. Carries the final report's details."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        request_id: str | None = None,
        http_status: int | None = None,
        attempts: int = 0,
        report: object | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.http_status = http_status
        self.attempts = attempts
        self.report = report

    @classmethod
    def from_report(cls, report: Any) -> DeliveryError:
        return cls(
            f"{report.error_code}: {report.error_message}",
            code=report.error_code,
            request_id=report.request_id,
            http_status=report.http_status,
            attempts=report.attempts,
            report=report,
        )


__all__ = [
    "BufferFullError",
    "ConfigError",
    "DeliveryError",
    "InvalidRecordError",
    "LoghoseError",
    "ProducerClosedError",
    "SpoolLockedError",
]
