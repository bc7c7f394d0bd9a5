"""Where the benchmark's runs execute: local worker processes (the default) or the actors of a Ray cluster.

Both run `fn(item)` for every item on `workers` workers, each set up once by `initializer(*initargs)`, and hand the
results back in completion order with a bounded number in flight (so a kill loses little and memory stays flat).
The runner's main process consumes them and is the only writer of results, whichever engine ran them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal, Protocol

EngineName = Literal["process", "ray"]
ENGINES: tuple[EngineName, ...] = ("process", "ray")
IN_FLIGHT_PER_WORKER = 2
RAY_OBJECT_STORE_BYTES = 256 * 1024**2  # a local cluster's object store: jobs and outcomes are small JSON


class MapUnordered(Protocol):
    def __call__(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]: ...


class EngineError(RuntimeError):
    """The engine cannot start (e.g. no Ray cluster at the address); the message says why."""


@contextmanager
def process_engine(workers: int, initializer: Callable[..., None], initargs: tuple) -> Iterator[MapUnordered]:
    with ProcessPoolExecutor(max_workers=workers, initializer=initializer, initargs=initargs) as pool:

        def map_unordered(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
            queue = iter(items)
            pending: set[Future] = {
                pool.submit(fn, item) for _, item in zip(range(IN_FLIGHT_PER_WORKER * workers), queue)
            }
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield future.result()
                    following = next(queue, None)
                    if following is not None:
                        pending.add(pool.submit(fn, following))

        yield map_unordered


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
            pending: dict[Any, Any] = {}  # object ref -> the actor computing it
            for actor in actors * IN_FLIGHT_PER_WORKER:
                item = next(queue, None)
                if item is None:
                    break
                pending[actor.call.remote(fn, item)] = actor
            while pending:
                (ready,), _ = ray.wait(list(pending), num_returns=1)
                actor = pending.pop(ready)
                yield ray.get(ready)
                following = next(queue, None)
                if following is not None:
                    pending[actor.call.remote(fn, following)] = actor

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
