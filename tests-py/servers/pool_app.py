"""multiprocessing: workers of a pool, or one Process, each logging 1 000 records through a
handler built in the parent (fork) or at import in the child (forkserver, spawn).

    python pool_app.py <start method> <closejoin|with|recycle|process>
"""

import multiprocessing
import sys

import sink

log = sink.logger("pool")


def work(n: int) -> int:
    for i in range(1000):
        log.info("task %d record %d", n, i)
    return n


if __name__ == "__main__":
    method, shape = sys.argv[1:3]
    context = multiprocessing.get_context(method)
    if shape == "closejoin":
        pool = context.Pool(4)
        pool.map(work, range(4))
        pool.close()
        pool.join()
    elif shape == "with":  # leaving the block terminates the workers (SIGTERM)
        with context.Pool(4) as pool:
            pool.map(work, range(4))
    elif shape == "recycle":  # every worker replaced after one task
        pool = context.Pool(2, maxtasksperchild=1)
        pool.map(work, range(4))
        pool.close()
        pool.join()
    else:
        process = context.Process(target=work, args=(0,))
        process.start()
        process.join()
