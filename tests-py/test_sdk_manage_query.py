"""The official aliyun-log-python-sdk managing and querying the emulator as it would the service.

Projects, logstores and indexes through the SDK's management calls (create, get, list, update,
delete, and the refusals the service answers); then records written by loghose found again by
the SDK's get_log (both its POST and GET forms) and get_histograms, with the search syntax.
"""

from __future__ import annotations

import time

import loghose
import pytest
from aliyun.log import GetHistogramsRequest, IndexConfig, IndexKeyConfig, IndexLineConfig, LogClient, LogException

PROJECT = "loghose"


@pytest.fixture()
def emu(monkeypatch):
    with loghose.Emulator() as emulator:
        # The SDK connects to `{project}.{endpoint}`: the emulator serves it as its HTTP proxy.
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", emulator.endpoint)
        monkeypatch.setenv("http_proxy", emulator.endpoint)
        yield emulator


def client_of(emu) -> LogClient:
    return LogClient(emu.endpoint.removeprefix("http://"), emu.access_key_id, emu.access_key_secret)


def refused(call, code: str) -> LogException:
    with pytest.raises(LogException) as raised:
        call()
    assert raised.value.get_error_code() == code, raised.value
    return raised.value


def index_config() -> IndexConfig:
    line = IndexLineConfig(token_list=[",", " ", ";", "=", "/", ":"], case_sensitive=False)
    keys = {
        "level": IndexKeyConfig(token_list=[" "], case_sensitive=False),
        "status": IndexKeyConfig(index_type="long"),
        "latency": IndexKeyConfig(index_type="double"),
        "path": IndexKeyConfig(token_list=["/"], case_sensitive=False),
    }
    return IndexConfig(line_config=line, key_config_list=keys)


def test_projects_logstores_and_indexes_are_managed_as_the_service_manages_them(emu):
    client = client_of(emu)
    client.create_project("sdk-manage", "made by the SDK")
    assert client.get_project("sdk-manage").get_description() == "made by the SDK"
    client.update_project("sdk-manage", "described again")
    assert client.get_project("sdk-manage").get_description() == "described again"
    assert "sdk-manage" in [p["projectName"] for p in client.list_project().get_projects()]
    refused(lambda: client.create_project("sdk-manage", "twice"), "ProjectAlreadyExist")
    refused(lambda: client.get_project("never-made"), "ProjectNotExist")

    client.create_logstore("sdk-manage", "app", ttl=7, shard_count=3, append_meta=True)
    got = client.get_logstore("sdk-manage", "app")
    assert (got.get_ttl(), got.get_shard_count(), got.append_meta) == (7, 3, True)
    assert len(client.list_shards("sdk-manage", "app").get_shards_info()) == 3
    client.update_logstore("sdk-manage", "app", ttl=14)
    assert client.get_logstore("sdk-manage", "app").get_ttl() == 14
    client.create_logstore("sdk-manage", "audit", ttl=1)
    listed = client.list_logstore("sdk-manage")
    assert (listed.get_logstores(), listed.get_total()) == (["app", "audit"], 2)
    assert client.list_logstore("sdk-manage", logstore_name_pattern="aud").get_logstores() == ["audit"]
    refused(lambda: client.create_logstore("sdk-manage", "app"), "LogStoreAlreadyExist")
    error = refused(lambda: client.create_logstore("sdk-manage", "forever", ttl=4000), "ParameterInvalid")
    assert "ttl 4000" in error.get_error_message()
    refused(lambda: client.create_logstore("sdk-manage", "many", shard_count=1000), "ParameterInvalid")
    refused(lambda: client.create_logstore("sdk-manage", "Bad_Name!"), "ParameterInvalid")
    refused(lambda: client.get_logstore("sdk-manage", "nothing"), "LogStoreNotExist")

    refused(lambda: client.get_index_config("sdk-manage", "app"), "IndexConfigNotExist")
    client.create_index("sdk-manage", "app", index_config())
    index = client.get_index_config("sdk-manage", "app").get_index_config()
    assert sorted(index.key_config_list) == ["latency", "level", "path", "status"]
    assert index.key_config_list["status"].index_type == "long"
    assert index.line_config.token_list == [",", " ", ";", "=", "/", ":"]
    refused(lambda: client.create_index("sdk-manage", "app", index_config()), "IndexAlreadyExist")
    client.update_index("sdk-manage", "app", IndexConfig(line_config=IndexLineConfig(token_list=[" "])))
    assert client.get_index_config("sdk-manage", "app").get_index_config().key_config_list == {}
    client.delete_index("sdk-manage", "app")
    refused(lambda: client.get_index_config("sdk-manage", "app"), "IndexConfigNotExist")

    client.delete_logstore("sdk-manage", "audit")
    refused(lambda: client.get_logstore("sdk-manage", "audit"), "LogStoreNotExist")
    client.delete_project("sdk-manage")
    refused(lambda: client.get_project("sdk-manage"), "ProjectNotExist")


def send_records(emu, logstore: str, now: int) -> None:
    producer = loghose.Producer(**emu.producer_options(logstore=logstore), linger_ms=10)
    rows = [
        ("error", "503", "12.5", "/api/orders", "payment declined for order 42"),
        ("info", "200", "0.8", "/api/orders", "order 43 paid"),
        ("warn", "429", "3.25", "/api/users", "too many requests from 10.0.0.9"),
        ("error", "500", "40.0", "/api/users", "database timeout"),
    ]
    for i, (level, status, latency, path, message) in enumerate(rows):
        producer.send(
            {"level": level, "status": status, "latency": latency, "path": path, "message": message, "n": str(i)},
            time=now - 10 + i,
        )
    assert producer.close(10) == 0


def found(resp) -> list[str]:
    return [log.get_contents()["n"] for log in resp.get_logs()]


@pytest.mark.parametrize("form", ["post", "get"])
def test_records_written_by_loghose_are_found_by_the_sdks_queries(emu, form):
    client = client_of(emu)
    client._get_logs_v2_enabled = form == "post"
    now = int(time.time())
    client.create_logstore(PROJECT, "queried", ttl=30, shard_count=2)
    refused(lambda: client.get_log(PROJECT, "queried", now - 60, now + 60), "IndexConfigNotExist")
    client.create_index(PROJECT, "queried", index_config())
    send_records(emu, "queried", now)

    def query(q, **more):
        resp = client.get_log(PROJECT, "queried", now - 60, now + 60, query=q, **more)
        assert resp.is_completed()
        return found(resp)

    assert query("") == ["0", "1", "2", "3"]
    assert query("*", reverse=True) == ["3", "2", "1", "0"]
    assert query("level: error") == ["0", "3"]
    assert query("level: error and status >= 501") == ["0"]
    assert query("status < 300 or latency > 39.5") == ["1", "3"]
    assert query("not level: error and path: users") == ["2"]
    assert query('"payment declined"') == ["0"]
    assert query("declin*") == ["0"]
    assert query("timeout or (path: orders and not error)") == ["1", "3"]
    assert query("", size=2, offset=1) == ["1", "2"]
    assert query("", size=2, offset=1, reverse=True) == ["2", "1"]
    assert query("__topic__: nothing") == []
    only_first = client.get_log(PROJECT, "queried", now - 10, now - 9)
    assert found(only_first) == ["0"]
    first = client.get_log(PROJECT, "queried", now - 60, now + 60, query="level: error").get_logs()[0]
    assert first.get_time() == now - 10
    assert first.get_contents()["message"] == "payment declined for order 42"
    assert first.get_contents()["path"] == "/api/orders"
    error = refused(lambda: query("* | select count(*) as n"), "ParameterInvalid")
    assert "analytic part" in error.get_error_message()
    error = refused(lambda: query("user: bob"), "ParameterInvalid")
    assert "key user is not indexed" in error.get_error_message()
    refused(lambda: query("(level: error"), "ParameterInvalid")


def test_histograms_count_the_matching_records_in_buckets(emu):
    client = client_of(emu)
    now = int(time.time())
    client.create_logstore(PROJECT, "counted", shard_count=1)
    client.create_index(PROJECT, "counted", index_config())
    send_records(emu, "counted", now)
    request = GetHistogramsRequest(PROJECT, "counted", now - 10, now - 6, query="level: error or level: warn")
    resp = client.get_histograms(request)
    assert resp.is_completed()
    assert resp.get_total_count() == 3
    counts = [(h.get_from(), h.get_count()) for h in resp.get_histograms()]
    assert counts == [(now - 10, 1), (now - 9, 0), (now - 8, 1), (now - 7, 1)]
