"""Run points and hand back their rows as they finish: in this process, a local process pool, or a
Dask cluster.

Each function starts the work (forks the pool's workers, or maps the points onto the cluster) before
it returns, then yields rows in completion order. Leaving the loop early (an interrupt), or closing the
generator, cancels the points not yet started; a LocalCluster started for the sweep is closed with it.

`--executor dask` without a scheduler starts a LocalCluster only for work large enough to pay for it
(`choose_executor`): on one machine the cluster computes nothing the fork pool does not, and its start and
stop cost a fixed 2.4-2.9 CPU-s and 2.7-5.8 s of wall time on two cores (two spawned worker interpreters
importing dask.distributed and hwsim; `tools/bench_sweep.py --dask`), so it is started from
LOCAL_CLUSTER_MIN_S_PER_WORKER (60) estimated seconds of points per worker, where that is at most ~10 % of
the sweep; below it the points run on the local pool instead, with a note saying so. Past the start the
cluster keeps pace with the pool: a 300-point simulate sweep on two cores ran at 0.88-1.23x the pool's
points per second. A cluster named by `--scheduler` is used whatever the size: its workers are running.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hwsim.errors import SweepError
from hwsim.sweep.spec import Point

if TYPE_CHECKING:
    from dask.distributed import Client
    from dask.distributed import Future as DaskFuture

Row = dict[str, object]
Evaluate = Callable[[Point], Row]
Rows = Generator[Row, None, None]

EXECUTORS = ("local", "dask")

# What one point costs, CPU seconds of hwsim.sweep.run.evaluate measured on the zoo: an estimate 5-50 ms
# (phases_example to ResNet-50); a simulation 0.04 s (phases_example), 0.47 s (SqueezeNet at 32x32), 6-7 s
# (AlexNet); a searched mapping 1-6 s more. Erring low only keeps the points on the local pool, as fast on one
# machine; erring high (a toy network simulated) can start a cluster for ~10 s of work, a few seconds lost.
SECONDS_PER_POINT = {"estimate": 0.01, "simulate": 0.5}
SEARCH_SECONDS_PER_POINT = 1.0
# Start a LocalCluster from this many estimated seconds of points per worker: its fixed start and stop
# (2.7-5.8 s wall on two cores, measured) is then at most ~10 % of the sweep.
LOCAL_CLUSTER_MIN_S_PER_WORKER = 60.0

# Where the points run (Choice.kind): the local pool (or this process, with one job), a Dask LocalCluster
# started for the sweep, or the running Dask cluster at --scheduler.
Kind = Literal["local", "local-cluster", "cluster"]
LOCAL: Kind = "local"
LOCAL_CLUSTER: Kind = "local-cluster"
CLUSTER: Kind = "cluster"


@dataclass(frozen=True)
class Choice:
    """Where a sweep's points run, and why when it is not what was asked for."""

    kind: Kind
    workers: int | None  # processes of the local pool or the LocalCluster; None for a running cluster
    scheduler: str | None  # the running cluster's address (CLUSTER)
    note: str | None  # one line for the user when --executor dask runs on the local pool


def cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def estimated_seconds(points: Sequence[Point]) -> float:
    """Roughly what evaluating `points` one after another costs, in CPU seconds (SECONDS_PER_POINT by mode, plus
    SEARCH_SECONDS_PER_POINT for a searched mapping): enough to tell milliseconds of work from minutes."""
    return sum(SECONDS_PER_POINT.get(p.mode, 0.0) + (SEARCH_SECONDS_PER_POINT if p.mapper == "search" else 0.0)
               for p in points)


def choose_executor(points: Sequence[Point], executor: str, scheduler: str | None, jobs: int | None) -> Choice:
    """Where `points` run for `--executor`, `--scheduler` and `--jobs`: a running cluster when a scheduler is
    named; for `dask` without one a LocalCluster of `jobs` workers (default one per CPU) when the points'
    estimated seconds per worker reach LOCAL_CLUSTER_MIN_S_PER_WORKER, else the local pool with a note; for
    `local` the pool of `jobs` processes (default one per CPU)."""
    if scheduler is not None:
        return Choice(CLUSTER, None, scheduler, None)
    workers = max(1, min(jobs or cpus(), len(points)))
    if executor != "dask" or not points:
        return Choice(LOCAL, workers, None, None)
    work_s = estimated_seconds(points)
    if work_s / workers >= LOCAL_CLUSTER_MIN_S_PER_WORKER:
        return Choice(LOCAL_CLUSTER, workers, None, None)
    pool = f"on {workers} local processes" if workers > 1 else "in this process"
    shown = f"{work_s:.0f}" if work_s >= 10 else f"{work_s:.2g}"
    note = (f"{len(points)} points (~{shown} CPU-s) run {pool}, not on a Dask LocalCluster: its start-up "
            f"pays from ~{LOCAL_CLUSTER_MIN_S_PER_WORKER * workers:.0f} CPU-s of points (a running cluster: "
            "--scheduler ADDR)")
    return Choice(LOCAL, workers, None, note)


def run_rows(points: Sequence[Point], evaluate: Evaluate, choice: Choice) -> Rows:
    """Rows of `points` where `choice` says, as they finish; close the generator to stop early."""
    if choice.kind == LOCAL:
        return local_rows(points, evaluate, choice.workers or 1)
    return dask_rows(points, evaluate, choice.scheduler, choice.workers)


def local_rows(points: Sequence[Point], evaluate: Evaluate, jobs: int) -> Rows:
    """Rows of `points` from `jobs` worker processes; with one job, one after another in this process."""
    if jobs == 1 or len(points) <= 1:
        return (evaluate(p) for p in points)
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(points)), initializer=worker_setup,
                               initargs=(os.getpid(),))
    futures = [pool.submit(evaluate, p) for p in points]  # the workers start here, before any output
    return _pool_rows(pool, futures)


PR_SET_PDEATHSIG = 1  # Linux prctl(2) option: the signal a process gets when its parent dies


def worker_setup(sweep_pid: int) -> None:
    """Run in each pool worker as it starts: the worker dies with the sweep's process however that ends (even
    SIGKILL: Linux sends the worker SIGKILL then, through prctl), and a SIGTERM ends it plainly rather than
    through the command line's handler it inherited at the fork."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown on exit is what remains
        return
    if os.getppid() != sweep_pid:  # the sweep's process died before prctl took effect
        os._exit(1)


def _pool_rows(pool: ProcessPoolExecutor, futures: list[Future[Row]]) -> Rows:
    try:
        for future in as_completed(futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                raise SweepError(f"a worker process died ({exc}); rerun the sweep to finish the missing points") \
                    from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def dask_rows(points: Sequence[Point], evaluate: Evaluate, scheduler: str | None,
              workers: int | None = None) -> Rows:
    """Rows of `points` evaluated on the Dask cluster whose scheduler listens at `scheduler`, or with no
    scheduler on a `LocalCluster` of `workers` single-threaded worker processes (default: one per CPU), started
    whatever the number of points (`choose_executor` decides whether one pays)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise SweepError("--executor dask needs dask.distributed, which is not installed; "
                         "pip install 'hwsim[dask]'") from None
    if scheduler is None:
        return _local_cluster_rows(points, evaluate, workers or cpus())
    try:
        client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler ({exc}); "
                         "give its address, e.g. tcp://host:8786") from None
    futures = client.map(evaluate, list(points), pure=False)
    return _dask_rows(client, futures)


# The LocalCluster runs points and serves nothing else (no dashboard; its scheduler's HTTP server, which Dask
# starts anyway, on a free port: on its default, 8787, a second cluster on the machine prints a warning), so
# its background polling is slowed to what a sweep needs: no statistical profiler sampling every task's stack
# every 10 ms (it feeds the dashboard, which is off),
# system statistics every 10 s rather than 0.5 s, the memory limits checked every second rather than 0.1 s,
# the event loop's health every second rather than 20 ms, and no work stealing (each worker takes the next
# point when it is free). At Dask's defaults these cost the sweep's process and each worker ~3 % of a core
# for as long as the sweep lasts (measured with a 60-point simulate sweep on two cores); its processes log
# only what is critical: a point that fails is a row, a lost worker a SweepError, and the heartbeats a
# closing cluster misses are no news.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "10s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.tick.interval": "1s",
    "distributed.scheduler.work-stealing": False,
}


def _local_cluster_rows(points: Sequence[Point], evaluate: Evaluate, workers: int) -> Rows:
    """Rows from a LocalCluster started at the first row asked for and closed when the loop ends, however it
    ends (all rows, a failed worker, an interrupt, the generator closed): no worker process outlives the sweep.
    Its worker processes each import hwsim once, at their first point, and run points until the sweep ends."""
    import dask
    from dask.distributed import Client, LocalCluster

    with ExitStack() as stack:
        stack.enter_context(dask.config.set(LOCAL_CLUSTER_CONFIG))
        with _interrupts_held():
            cluster = stack.enter_context(LocalCluster(
                n_workers=min(workers, len(points)), threads_per_worker=1, processes=True, dashboard_address=None,
                scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=logging.CRITICAL, preload=[__name__]))
            client = stack.enter_context(Client(cluster))
        yield from _dask_rows(client, client.map(evaluate, list(points), pure=False))


HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """While a LocalCluster starts (a few seconds), block SIGINT and SIGTERM: a cluster interrupted half-started
    cannot be closed (Dask then fails at exit with a traceback), while a started one closes cleanly. A blocked
    signal waits, pending, and acts once they are unblocked here, the cluster started or failed to. The threads
    and worker processes the cluster starts meanwhile inherit the block (across fork and exec), so a Ctrl-C at
    the terminal, which reaches the whole process group, cannot end a worker still importing; each worker
    unblocks them in its preload (`dask_setup`), ignoring Ctrl-C there. Only the main thread can do this;
    elsewhere nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)  # a pending one acts now, at its handler


def dask_setup(worker: object) -> None:
    """Dask's preload hook, run by each LocalCluster worker as it starts (`preload=[this module]`): Ctrl-C
    reaches the whole process group, and it is the sweep's own process that closes the cluster; the workers
    ignore it rather than each die with a traceback. The signals the sweep blocked while the cluster started
    (`_interrupts_held`) are unblocked: a Ctrl-C pending is dropped, a SIGTERM (the nanny ending the worker)
    acts."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)


def _dask_rows(client: Client, futures: list[DaskFuture[Row]]) -> Rows:
    from dask.distributed import as_completed as dask_completed

    try:
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a worker lost: the point was not evaluated, so it is not recorded
                raise SweepError(f"a Dask worker failed ({type(exc).__name__}: {exc}); rerun the sweep to "
                                 "finish the missing points") from None
    finally:
        client.cancel(futures)
        client.close()


__all__ = ["CLUSTER", "EXECUTORS", "LOCAL", "LOCAL_CLUSTER", "Choice", "choose_executor", "cpus", "dask_rows",
           "estimated_seconds", "local_rows", "run_rows"]
