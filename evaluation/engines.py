"""Where the benchmark's runs execute: local worker processes (the default) or the actors of a Ray cluster.

Both run `fn(item)` for every item on `workers` workers, each set up once by `initializer(*initargs)`, and hand the
results back in completion order with a bounded number in flight (so a kill loses little and memory stays flat).
The runner's main process consumes them and is the only writer of results, whichever engine ran them.

A worker that dies running an item (a native crash, the out-of-memory killer) costs only that item: the engine
yields `WorkerDied(item, cause)` for it, starts a fresh worker in its place and goes on with the others.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Literal, Protocol

from models.model_host import describe_exit

EngineName = Literal["process", "ray"]
ENGINES: tuple[EngineName, ...] = ("process", "ray")
IN_FLIGHT_PER_WORKER = 2  # Ray: a queued call per actor keeps it busy while the driver stores the last result
RAY_OBJECT_STORE_BYTES = 256 * 1024**2  # a local cluster's object store: jobs and outcomes are small JSON
STOP_WAIT_SEC = 10.0


@dataclass(frozen=True)
class WorkerDied:
    """Yielded instead of a result: the worker running `item` died; `cause` says how ('signal 11 (SIGSEGV)')."""

    item: Any
    cause: str


class MapUnordered(Protocol):
    def __call__(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]: ...


class EngineError(RuntimeError):
    """The engine cannot start (e.g. no Ray cluster at the address); the message says why."""


def _serve(connection: Connection, initializer: Callable[..., None], initargs: tuple) -> None:
    """A worker process: set up once, then answer (fn, item) messages with ("ok", result) or ("raised", error)
    until told to stop (None) or its parent goes away."""
    try:
        initializer(*initargs)
    except Exception as exc:  # reported to the parent, which cannot go on without workers
        connection.send(("init_failed", f"{type(exc).__name__}: {exc}"))
        return
    connection.send(("ready", None))
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        fn, item = message
        try:
            connection.send(("ok", fn(item)))
        except Exception as exc:  # re-raised in the parent, as a pool's future would
            connection.send(("raised", exc))


class _Worker:
    """One worker process and the item it is running (None when idle)."""

    def __init__(self, initializer: Callable[..., None], initargs: tuple):
        ours, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_serve, args=(theirs, initializer, initargs), daemon=True)
        self.process.start()
        theirs.close()
        self.connection = ours
        self.item: Any = None
        self.busy = False

    def await_ready(self) -> _Worker:
        """Waits for its set-up; a worker that fails or dies there is an EngineError (no worker, no run)."""
        try:
            kind, detail = self.connection.recv()
        except EOFError:
            cause = self.cause_of_death()
            self.stop()
            raise EngineError(f"a worker died while starting: {cause}") from None
        if kind == "init_failed":
            self.stop()
            raise EngineError(f"a worker could not start: {detail}")
        return self

    def assign(self, fn: Callable[[Any], Any], item: Any) -> None:
        self.item, self.busy = item, True
        self.connection.send((fn, item))

    def cause_of_death(self) -> str:
        self.process.join(STOP_WAIT_SEC)
        return describe_exit(self.process.exitcode)

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.connection.send(None)
            except OSError:
                pass
            self.process.join(STOP_WAIT_SEC)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


@contextmanager
def process_engine(workers: int, initializer: Callable[..., None], initargs: tuple) -> Iterator[MapUnordered]:
    """`workers` processes, one item each at a time; the next item is sent before a result is handed on, so a
    worker is busy while the main process stores what it returned."""
    pool = [_Worker(initializer, initargs) for _ in range(workers)]  # set up in parallel
    try:
        for worker in pool:
            worker.await_ready()

        def map_unordered(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
            queue = iter(items)
            no_more = object()

            def feed(index: int) -> None:
                """The next item to pool[index]; a worker that died while idle is replaced first."""
                item = next(queue, no_more)
                if item is no_more:
                    pool[index].item, pool[index].busy = None, False
                    return
                try:
                    pool[index].assign(fn, item)
                except OSError:
                    pool[index].stop()
                    pool[index] = _Worker(initializer, initargs).await_ready()
                    pool[index].assign(fn, item)

            for index in range(len(pool)):
                feed(index)
            while busy := [w for w in pool if w.busy]:
                ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy])
                for index, worker in enumerate(pool):
                    if not worker.busy or (worker.connection not in ready and worker.process.sentinel not in ready):
                        continue
                    item = worker.item
                    try:
                        kind, payload = worker.connection.recv()  # a result sent just before dying still counts
                    except (EOFError, OSError):
                        cause = worker.cause_of_death()
                        worker.stop()
                        pool[index] = _Worker(initializer, initargs).await_ready()
                        feed(index)
                        yield WorkerDied(item, cause)
                        continue
                    feed(index)
                    if kind == "raised":
                        raise payload
                    yield payload

        yield map_unordered
    finally:
        for worker in pool:
            worker.stop()


class _RayWorker:
    """One Ray actor: set up once like a pool process, then runs items one at a time."""

    def __init__(self, initializer: Callable[..., None], initargs: tuple):
        initializer(*initargs)

    def call(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return fn(item)


@contextmanager
def ray_engine(
    workers: int, initializer: Callable[..., None], initargs: tuple, address: str | None = None
) -> Iterator[MapUnordered]:
    """`workers` actors on the cluster at `address` ("auto": the one this machine belongs to), or on a local
    cluster of `workers` CPUs started here (and stopped after) when no address is given."""
    import ray  # imported here: ray is heavy and only this engine needs it

    started_here = not ray.is_initialized()
    try:
        if started_here:
            # A local cluster is sized and kept quiet here; a remote one keeps its own settings (a ray:// client
            # would forward these options to the server and log that it did).
            local = {
                "num_cpus": workers,
                "object_store_memory": RAY_OBJECT_STORE_BYTES,
                "include_dashboard": False,
                "log_to_driver": False,
            }
            ray.init(address=address, **(local if address is None else {}))
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise EngineError(f"cannot start or reach the Ray cluster: {str(exc).strip().splitlines()[0]}") from None
    try:
        actor_class = ray.remote(num_cpus=1)(_RayWorker)
        actors = [actor_class.remote(initializer, initargs) for _ in range(workers)]

        def map_unordered(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
            queue = iter(items)
            no_more = object()
            pending: dict[Any, tuple[Any, Any]] = {}  # object ref -> (its actor, its item), in submission order

            def submit(actor: Any, item: Any) -> None:
                pending[actor.call.remote(fn, item)] = (actor, item)

            for actor in actors * IN_FLIGHT_PER_WORKER:
                item = next(queue, no_more)
                if item is no_more:
                    break
                submit(actor, item)
            while pending:
                (ready,), _ = ray.wait(list(pending), num_returns=1)
                actor, item = pending[ready]
                try:
                    result = ray.get(ready)
                except ray.exceptions.RayActorError:
                    # An actor runs its calls in order: the first of its pending calls is the one it died running;
                    # the others never started and go to the actor that replaces it.
                    lost = [(ref, queued) for ref, (owner, queued) in pending.items() if owner is actor]
                    for ref, _ in lost:
                        del pending[ref]
                    replacement = actor_class.remote(initializer, initargs)
                    actors[actors.index(actor)] = replacement
                    for _, queued in lost[1:]:
                        submit(replacement, queued)
                    yield WorkerDied(lost[0][1], "the Ray actor died")
                    continue
                del pending[ready]
                following = next(queue, no_more)
                if following is not no_more:
                    submit(actor, following)
                yield result

        yield map_unordered
    finally:
        if started_here:
            ray.shutdown()


def open_engine(
    name: EngineName, workers: int, initializer: Callable[..., None], initargs: tuple, address: str | None = None
) -> AbstractContextManager[MapUnordered]:
    if name == "ray":
        return ray_engine(workers, initializer, initargs, address)
    return process_engine(workers, initializer, initargs)
