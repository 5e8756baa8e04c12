"""A batch job that must not lose a record: a spool on disk, and an exit status that says what
happened, for cron, systemd or a CI pipeline to act on.

Every record is on disk before ``send`` returns (``spool_dir``; ``spool_sync="batch"`` makes each
batch durable before it is sent). If the service cannot take everything before the job's time
is up, the rest stays in the spool and the next run on the same directory delivers it. The
exit status follows ``loghose pipe``'s: 0 every record delivered, 75 the rest kept durably for
the next run, 1 something was lost.

    python examples/python/batch_job.py [SPOOL_DIR] [SECONDS]

SECONDS (default 30) is how long the close may take to deliver what is left.
"""

from __future__ import annotations

import sys
import tempfile

import loghose
from _destination import destination


def main(spool_dir: str, seconds: float) -> int:
    with destination("jobs") as (options, emu):
        producer = loghose.Producer(**options, spool_dir=spool_dir, spool_sync="batch")
        for n in range(10_000):
            producer.send({"job": "nightly-export", "row": n, "status": "exported"})
        closed = producer.close(timeout=seconds)
        print(repr(closed))
        if emu is not None:
            print(f"the emulator holds {len(emu.logs('examples', 'jobs'))} records")
    if closed:  # an int: records neither delivered nor durably kept
        print(f"{int(closed)} records lost", file=sys.stderr)
        return 1
    if closed.kept:
        print(f"{closed.kept} records kept in {spool_dir} for the next run", file=sys.stderr)
        return 75
    return 0


if __name__ == "__main__":
    spool = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="loghose-job-")
    sys.exit(main(spool, float(sys.argv[2]) if len(sys.argv) > 2 else 30.0))
