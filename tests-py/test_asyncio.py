"""The asyncio front: awaitables resolved on the caller's loop, flush/close, async with."""

from __future__ import annotations

import asyncio

import loghose
import pytest

pytestmark = pytest.mark.timeout(60)


def test_awaitables_resolve_on_the_loop_with_reports():
    async def main():
        with loghose.Emulator() as emu:
            async with loghose.AsyncProducer(**emu.producer_options(), linger_ms=10) as p:
                reports = await asyncio.gather(*(p.send({"i": str(i)}) for i in range(100)))
                assert all(r.delivered for r in reports)
                p.send_nowait({"i": "fire-and-forget"})
                assert await p.flush(10) == 0
            assert emu.totals("loghose", "logs")["logs"] == 101

    asyncio.run(main())


def test_failures_raise_delivery_error_in_the_awaiting_task():
    async def main():
        with loghose.Emulator(auto_create=False) as emu:
            p = loghose.AsyncProducer(**emu.producer_options(), linger_ms=0)
            with pytest.raises(loghose.DeliveryError) as info:
                await p.send({"i": "1"})
            assert info.value.code == "ProjectNotExist"
            await p.close(5)

    asyncio.run(main())


def test_a_loop_that_closed_meanwhile_is_handled_quietly():
    with loghose.Emulator() as emu:
        emu.inject("latency", ms=300, count=1)
        producer = loghose.AsyncProducer(**emu.producer_options(), linger_ms=0)

        async def send_and_leave():
            producer.send({"i": "1"})  # never awaited; the loop ends first

        asyncio.run(send_and_leave())
        assert producer._producer.flush(10) == 0
        assert emu.totals("loghose", "logs")["logs"] == 1
        producer._producer.close(5)
