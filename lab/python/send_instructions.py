"""Instructions per Python `send` of the S1 records, for `valgrind --tool=callgrind` (see
lab/scripts/instructions.sh): adds N prebuilt S1 records (the two kinds alternating) to a producer
whose batches never seal while it runs, then exits without closing. The marginal count per send
is (count at N - count at 0) / N."""

import os
import sys

import loghose

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
A = {"content_key_1": "1" + ALPHABET * 3} | {f"content_key_{d}": f"{d}{ALPHABET}" for d in range(2, 10)}
A["index"] = "12345"
B = {"LogHub": "Real-time log collection and consumption",
     "Search/Analytics": "Query and real-time analysis",
     "Visualized": "dashboard and report functions",
     "Interconnection": "Grafana and JDBC/SQL92"}

n = int(sys.argv[1])
producer = loghose.Producer(endpoint="http://127.0.0.1:9", project="proj", logstore="logs",
                            access_key_id="id", access_key_secret="secret",
                            batch_max_bytes=4 << 20, batch_max_count=40960,
                            buffer_max_bytes=128 << 20, linger_ms=600_000)
send = producer.send
records = (A, B)
for i in range(n):
    send(records[i & 1])
sys.stdout.flush()
os._exit(0)
