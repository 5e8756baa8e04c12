"""The official aliyun-log-python-sdk as a real client of the emulator.

Writes with put_logs (lz4 and uncompressed, with and without an STS token, with a hash key,
many log groups), reads back with list_shards / get_cursor / pull_logs and compares every field;
then sends requests the service refuses and checks each status and errorCode.
"""

from __future__ import annotations

import json
import time

import lz4.block
import pytest
from aliyun.log import LogClient, LogException, LogItem, PutLogsRequest
from aliyun.log.log_logs_pb2 import LogGroup
from conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, STS_ID, STS_SECRET, STS_TOKEN

PROJECT = "interop"
LOGSTORE = "sdk-logs"


def make_items(batch: int, count: int, now: int) -> list[LogItem]:
    items = []
    for i in range(count):
        item = LogItem(timestamp=now - i, time_nano_part=1000 * i + batch + 1)
        item.set_contents([
            ("batch", str(batch)),
            ("index", str(i)),
            ("message", f"log {i} of batch {batch} with unicode: héllo ✓"),
            ("Search/Analytics", "Query and real-time analysis"),
        ])
        items.append(item)
    return items


def pull_everything(client: LogClient, logstore: str):
    """Every (shard, group) the SDK reads back, following cursors page by page."""
    shards = client.list_shards(PROJECT, logstore).get_shards_info()
    out = []
    for shard in shards:
        shard_id = shard["shardID"]
        cursor = client.get_cursor(PROJECT, logstore, shard_id, "begin").get_cursor()
        end = client.get_cursor(PROJECT, logstore, shard_id, "end").get_cursor()
        while True:
            resp = client.pull_logs(PROJECT, logstore, shard_id, cursor, count=3, end_cursor=end)
            if resp.get_log_count() == 0:
                break
            out.extend((shard_id, g) for g in resp.loggroup_list.LogGroups)
            cursor = resp.get_next_cursor()
    return shards, out


def test_put_logs_and_read_back_every_field(sls_client, via_emulator_proxy):
    now = int(time.time())
    sts_client = LogClient(
        f"127.0.0.1:{via_emulator_proxy.port}", STS_ID, STS_SECRET, securityToken=STS_TOKEN, source="10.9.9.9"
    )
    sent = {}
    plan = [
        (sls_client, dict(compress=True), None),
        (sls_client, dict(compress=False), None),
        (sts_client, dict(compress=True), None),
        (sts_client, dict(compress=False), None),
        (sls_client, dict(compress=True), "00000000000000000000000000000000"),
        (sls_client, dict(compress=True), "ffffffffffffffffffffffffffffffff"),
    ]
    for batch in range(12):
        client, options, hash_key = plan[batch % len(plan)]
        items = make_items(batch, count=5 + batch, now=now)
        tags = [("tag_1", "val_1"), ("__pack_id__", f"ABCDEF0123456789-{batch:X}")]
        request = PutLogsRequest(
            PROJECT, LOGSTORE, topic=f"topic-{batch}", source=None, logitems=items, hashKey=hash_key, logtags=tags,
            **options,
        )
        client.put_logs(request)
        sent[str(batch)] = (items, tags, hash_key, client)

    shards, groups = pull_everything(sls_client, LOGSTORE)
    assert [s["shardID"] for s in shards] == [0, 1]
    assert shards[0]["inclusiveBeginKey"] == "0" * 32 and shards[-1]["exclusiveEndKey"] == "f" * 32
    assert len(groups) == len(sent)
    seen = set()
    for shard_id, group in groups:
        batch = group.Logs[0].Contents[0].Value
        items, tags, hash_key, client = sent[batch]
        seen.add(batch)
        assert group.Topic == f"topic-{batch}"
        assert group.Source == ("10.9.9.9" if client is sts_client else "10.1.2.3")
        assert [(t.Key, t.Value) for t in group.LogTags] == tags
        assert len(group.Logs) == len(items)
        for log, item in zip(group.Logs, items, strict=True):
            assert log.Time == item.timestamp
            assert log.Time_ns == item.time_nano_part
            assert [(c.Key, c.Value) for c in log.Contents] == [(k, v) for k, v in item.contents]
        if hash_key == "0" * 32:
            assert shard_id == 0
        if hash_key == "f" * 32:
            assert shard_id == 1
    assert seen == set(sent)

    counters = json.loads(via_emulator_proxy.api("counters"))
    assert counters["logs"] == sum(len(v[0]) for v in sent.values())
    assert counters["accepted_requests"] == len(sent)


def test_pull_from_time_and_end_cursor_are_empty_past_the_data(sls_client):
    request = PutLogsRequest(PROJECT, "tail", topic="", source=None, logitems=make_items(0, 3, int(time.time())))
    sls_client.put_logs(request)
    for shard in (0, 1):
        end = sls_client.get_cursor(PROJECT, "tail", shard, "end").get_cursor()
        resp = sls_client.pull_logs(PROJECT, "tail", shard, end)
        assert resp.get_log_count() == 0
        future = sls_client.get_cursor(PROJECT, "tail", shard, str(int(time.time()) + 3600)).get_cursor()
        assert future == end


def expect_error(call, status: int, code: str):
    with pytest.raises(LogException) as info:
        call()
    assert (info.value.resp_status, info.value.get_error_code()) == (status, code), info.value
    assert info.value.get_request_id(), "every refusal carries x-log-requestid"
    return info.value


def one_request(logstore: str = LOGSTORE, key: str = "message") -> PutLogsRequest:
    item = LogItem(contents=[(key, "value")])
    return PutLogsRequest(PROJECT, logstore, topic="t", source="s", logitems=[item])


def test_wrong_access_key_is_unauthorized(via_emulator_proxy):
    client = LogClient(f"127.0.0.1:{via_emulator_proxy.port}", "nobody", ACCESS_KEY_SECRET)
    expect_error(lambda: client.put_logs(one_request()), 401, "Unauthorized")


def test_wrong_secret_does_not_match(via_emulator_proxy):
    client = LogClient(f"127.0.0.1:{via_emulator_proxy.port}", ACCESS_KEY_ID, "not-the-secret")
    error = expect_error(lambda: client.put_logs(one_request()), 401, "SignatureNotMatch")
    assert "not matched" in error.get_error_message()


def test_wrong_sts_token_is_unauthorized(via_emulator_proxy):
    client = LogClient(f"127.0.0.1:{via_emulator_proxy.port}", STS_ID, STS_SECRET, securityToken="stolen")
    expect_error(lambda: client.put_logs(one_request()), 401, "Unauthorized")


def test_stale_date_is_expired(sls_client, monkeypatch):
    from aliyun.log import auth

    stale = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() - 20 * 60))
    monkeypatch.setattr(auth.AuthV1, "_getGMT", staticmethod(lambda: stale))
    error = expect_error(lambda: sls_client.put_logs(one_request()), 400, "RequestTimeExpired")
    assert stale in error.get_error_message()


def raw_put(client: LogClient, body: bytes, raw_size: int, compress: str | None):
    """Sends a PutLogs body through the SDK's own signing and transport."""
    headers = {"x-log-bodyrawsize": str(raw_size), "Content-Type": "application/x-protobuf"}
    if compress:
        headers["x-log-compresstype"] = compress
    return client._send("POST", PROJECT, body, f"/logstores/{LOGSTORE}/shards/lb", {}, headers)


def valid_group_bytes() -> bytes:
    group = LogGroup()
    log = group.Logs.add()
    log.Time = int(time.time())
    content = log.Contents.add()
    content.Key, content.Value = "message", "a valid log, a valid log, a valid log"
    return group.SerializeToString()


def test_corrupt_lz4_body_fails_to_uncompress(sls_client):
    raw = valid_group_bytes()
    corrupt = b"\xf0\xff\xff\xff" + raw[:10]
    expect_error(lambda: raw_put(sls_client, corrupt, len(raw), "lz4"), 400, "PostBodyUncompressError")


def test_lying_raw_size_fails_to_uncompress(sls_client):
    raw = valid_group_bytes()
    body = lz4.block.compress(raw)[4:]
    raw_put(sls_client, body, len(raw), "lz4")  # the truth is accepted
    expect_error(lambda: raw_put(sls_client, body, len(raw) + 10, "lz4"), 400, "PostBodyUncompressError")
    expect_error(lambda: raw_put(sls_client, raw, len(raw) - 1, None), 400, "PostBodyUncompressError")


def test_invalid_key_name_is_refused(sls_client):
    expect_error(lambda: sls_client.put_logs(one_request(key="__time__")), 400, "InvalidKey")
    expect_error(lambda: sls_client.put_logs(one_request(key="two\nlines")), 400, "InvalidKey")


def test_refused_requests_store_nothing(sls_client, via_emulator_proxy):
    with pytest.raises(LogException):
        sls_client.put_logs(one_request(logstore="untouched", key="__source__"))
    counters = json.loads(via_emulator_proxy.api("counters"))
    assert counters["logs"] == 0
    assert counters["rejected"] == {"InvalidKey": 1}
