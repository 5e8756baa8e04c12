"""celery with a filesystem broker: each task logs 500 records (``LOGHOSE_TEST_BROKER`` is the
broker's directory)."""

import os

import sink
from celery import Celery

broker = os.environ["LOGHOSE_TEST_BROKER"]
app = Celery("celery_app", broker="filesystem://", broker_transport_options={
    "data_folder_in": broker, "data_folder_out": broker, "control_folder": broker + "-control",
    "store_processed": False})
log = sink.logger("task")


@app.task
def work(n: int) -> None:
    for i in range(500):
        log.info("task %d record %d", n, i)
