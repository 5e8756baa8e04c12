"""The Python front across the emulator's network and quotas: the send concurrency options
reach the engine, a quota's push backs show in ``stats()["send_limits"]`` and in the emulator's
counters, and every record still arrives exactly once."""

from __future__ import annotations

import json
import urllib.request

import loghose
import pytest


def _ids(emu: loghose.Emulator, logstore: str = "logs") -> list[int]:
    return sorted(int(dict(log["contents"])["id"]) for log in emu.logs("loghose", logstore))


def test_a_shard_quota_pushes_back_and_every_record_arrives_once() -> None:
    with loghose.Emulator(network={"latency_ms": 5}, quotas={"shard_writes_per_sec": 10}) as emu:
        p = loghose.Producer(**emu.producer_options(), batch_max_count=5, linger_ms=10)
        for i in range(300):
            p.send({"id": str(i)})
        assert p.flush(60) == 0
        (limit,) = p.stats()["send_limits"]
        assert (limit["project"], limit["logstore"]) == ("loghose", "logs")
        assert limit["pushed_back"] > 0
        assert limit["cuts"] > 0
        counters = emu.counters()
        assert counters["throttled"]["shard_writes"] == limit["pushed_back"]
        assert counters["rejected"]["ShardWriteQuotaExceed"] == limit["pushed_back"]
        assert p.stats()["retried"] == limit["pushed_back"]
        assert _ids(emu) == list(range(300))
        assert counters["duplicate_groups"] == 0
        p.close()


def test_fixed_mode_keeps_send_concurrency_and_a_bad_mode_names_the_option() -> None:
    with loghose.Emulator() as emu:
        p = loghose.Producer(**emu.producer_options(), send_concurrency_mode="fixed",
                             send_concurrency=3)
        p.send({"id": "0"})
        assert p.flush(30) == 0
        assert p.stats()["send_limits"][0]["limit"] == 3
        p.close()
        with pytest.raises(loghose.ConfigError, match="send_concurrency_mode"):
            loghose.Producer(**emu.producer_options(), send_concurrency_mode="fast")
        with pytest.raises(loghose.ConfigError, match="send_concurrency"):
            loghose.Producer(**emu.producer_options(), send_concurrency=2,
                             send_concurrency_min=4)


def test_the_admin_api_changes_the_round_trip_while_it_runs() -> None:
    with loghose.Emulator() as emu:
        request = urllib.request.Request(
            f"{emu.endpoint}/_emulator/network", data=json.dumps({"latency_ms": 40}).encode(),
            method="PUT", headers={"content-type": "application/json"})
        with urllib.request.urlopen(request) as answer:
            assert json.load(answer)["latency_ms"] == 40
        p = loghose.Producer(**emu.producer_options(), linger_ms=0)
        p.send({"id": "0"})
        assert p.flush(30) == 0
        assert p.stats()["send_limits"][0]["rtt_ms"] >= 35
        p.close()
