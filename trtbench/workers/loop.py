"""A timing worker: one process that hosts one variant and times its calls on request (docs/measuring.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import math
import os
import pickle
import random
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import ModuleType
from typing import Any, Optional, Protocol

import torch

from trtbench.core.knobs import BOUND_CPUS, Knobs, own_temp_env, worker_env
from trtbench.measure.energy import counter_or_none
from trtbench.measure.timing import Block
from trtbench.measure.trackers import block_trackers
from trtbench.workers.checked_call import CheckedCall
from trtbench.workers.handlers import HANDLERS, Check, Exit, Facts, Hosted, TimeBlock, load


class Recipe(Protocol):
    """What a worker hosts: ``materialize()`` -> (calls per point label, facts), on ``device``."""

    device: str

    def materialize(self) -> tuple[dict[str, Any], dict]: ...


PADDING_VAR = "TRTBENCH_ENV_PADDING"  # a variable of random length: the worker's environment size, drawn at start
MAX_PADDING = 4096  # bytes: environment sizes up to a page moved stack alignment and timings (Mytkowicz et al. 2009)
READY_CPU_S = "ready_cpu_s"  # worker fact: CPU seconds the process used until ready to time (a further process's cost)


class WorkerError(RuntimeError):
    """A worker failed: its code raised, its process died, or it did not answer in time."""


class BuildTooSlow(WorkerError):
    """A worker still building at ``benchmark.max_build_s``, killed: its variant's rows are skipped."""


@dataclasses.dataclass(frozen=True)
class Assignment:
    """What a worker is given before it builds: its recipe and its handler modules' files."""

    recipe: Recipe
    handlers: dict[str, str]  # module name -> its file, each run by handlers.load


@dataclasses.dataclass(frozen=True)
class Build:
    """Build the recipe (the parent paces the builds); the replies: :class:`Building`, then :class:`Ready`."""


@dataclasses.dataclass(frozen=True)
class Building:
    """The worker's imports are done and its build begins (the build's clock starts: benchmark.max_build_s)."""


@dataclasses.dataclass(frozen=True)
class Ready:
    """Built: the worker's facts (pid, bound CPUs, the recipe's facts, its CPU until ready)."""

    facts: dict


@dataclasses.dataclass(frozen=True)
class Failed:
    """A request failed in the worker: the traceback."""

    traceback: str


class _Loaded(pickle.Unpickler):
    """Reads a request whose class's module the worker has loaded (docs/architecture.md, "Worker requests")."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("trtbench.") and module not in sys.modules:
            raise _unhandled(name)
        return super().find_class(module, name)


def _unhandled(name: str) -> WorkerError:
    return WorkerError(f"no handler for the worker request {name} (known: {', '.join(k.__name__ for k in HANDLERS)}): "
                       "the module that handles it was not named when the worker was assigned")


def worker_main(fd: int) -> None:
    """The timing worker's loop on socket ``fd``: build the recipe, then answer each request until told to exit."""
    conn = Connection(fd)
    try:
        assigned = conn.recv()
        load(assigned.handlers)
        if not isinstance(conn.recv(), Build):
            return
        conn.send(Building())
        calls, facts = assigned.recipe.materialize()
        device = torch.device(assigned.recipe.device)
        meter = counter_or_none(device)
        hosted = Hosted(conn, calls, device, meter, block_trackers(device, meter))
        gc.collect()
        gc.disable()
        bound = {"bound_cpus": sorted(os.sched_getaffinity(0))} if os.environ.get(BOUND_CPUS) else {}
        conn.send(Ready({"pid": os.getpid(), **bound, **facts, READY_CPU_S: round(time.process_time(), 2)}))
    except BaseException:  # noqa: BLE001 - every failure goes to the parent as text
        conn.send(Failed(traceback.format_exc()))
        return
    hosted.idle_since_cpu = time.process_time()
    while True:
        try:
            data = conn.recv_bytes()
        except EOFError:  # the parent is gone
            return
        try:
            request = _Loaded(io.BytesIO(data)).load()
            handler = HANDLERS.get(type(request))
            if handler is None:
                raise _unhandled(type(request).__name__)
            reply = handler(hosted, request)
        except Exception:  # noqa: BLE001
            conn.send(Failed(traceback.format_exc()))
            continue
        if reply is not None:
            conn.send(reply)
        del reply


class Worker:
    """The parent's handle on one worker process (see the module docstring)."""

    def __init__(self, name: str, timeout_s: float, log: Optional[Path] = None, env: Optional[dict] = None):
        """Start the process, which imports torch and waits for its recipe; output to ``log``, environment ``env``."""
        self.name, self.timeout_s, self.log = name, timeout_s, log
        ours, theirs = socket.socketpair()
        draw = random.SystemRandom()  # the worker's own start-up luck: its hash seed and its environment's size
        luck = {"PYTHONHASHSEED": str(draw.randrange(1, 2**32)), PADDING_VAR: "x" * draw.randrange(MAX_PADDING + 1)}
        self.startup = {"hash_seed": int(luck["PYTHONHASHSEED"]), "env_padding_bytes": len(luck[PADDING_VAR])}
        # its temporary folder, removed by kill() (see own_temp_env)
        self.temp = tempfile.TemporaryDirectory(prefix="trtbench-worker-tmp-", ignore_cleanup_errors=True)
        env = own_temp_env({**(env if env is not None else worker_env(Knobs())), **luck,
                            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},  # trtbench, the model's module
                           self.temp.name)
        with open(log, "wb") if log is not None else contextlib.nullcontext() as output:
            self.process = subprocess.Popen(  # bound to its cores (if any) before torch loads its OpenMP runtime
                [sys.executable, "-c", "from trtbench.core.knobs import apply_binding; apply_binding(); "
                 f"from trtbench.workers.loop import worker_main; worker_main({theirs.fileno()})"],
                pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL, stdout=output,
                stderr=subprocess.STDOUT if output else None)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.facts: dict = dict(self.startup)

    def assign(self, name: str, recipe: Recipe, handlers: tuple[ModuleType, ...] = ()) -> None:
        """Give the worker what it hosts (built on :meth:`start_build`) and its further ``handlers``' modules."""
        self.name = name
        self._send_starting(Assignment(recipe, {module.__name__: module.__file__ for module in handlers}))

    def _send_starting(self, message: Any) -> None:
        """Send ``message`` to the worker as it starts; one that died is a :class:`WorkerError` with its output."""
        try:
            self.conn.send(message)
        except (BrokenPipeError, OSError):
            self._reap(5)
            raise WorkerError(f"{self.name}'s worker died while starting ({self._exit_text()})"
                              + self._log_tail()) from None

    def _receive(self, what: str) -> Any:
        """The answer to ``what``, within the worker timeout or the worker killed; its error a :class:`WorkerError`."""
        if not self.conn.poll(self.timeout_s):  # blocks in poll(2): no busy wait
            self.kill()
            raise WorkerError(f"{self.name}'s worker gave no answer to '{what}' within {self.timeout_s:g} s "
                              f"(benchmark.worker_timeout_s) and was killed")
        reply = self.take(what)
        if isinstance(reply, Failed):
            raise WorkerError(f"{self.name}'s worker failed during '{what}':\n{reply.traceback}")
        return reply

    def answer(self, what: str, timeout_s: float, request: str) -> Any:
        """The answer to ``what``, within ``timeout_s`` or the worker killed; its error a :class:`WorkerError`."""
        if not self.conn.poll(timeout_s):
            self.kill()
            raise WorkerError(f"{self.name}'s worker gave no answer to {request} within {timeout_s:g} s and was killed")
        return self._receive(what)

    def take(self, what: str) -> Any:
        """The next message, waited for without a limit; a worker that died is a :class:`WorkerError`."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self._reap(5)
            raise WorkerError(f"{self.name}'s worker died during '{what}' ({self._exit_text()})"
                              + self._log_tail()) from None

    def _reap(self, timeout_s: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout_s)

    def _log_tail(self, lines: int = 20) -> str:
        """The end of the worker's output (a crashing runtime's last words), or nothing."""
        try:
            text = self.log.read_text(errors="replace").strip() if self.log else ""
        except OSError:
            return ""
        return ("; its last output:\n" + "\n".join(text.splitlines()[-lines:])) if text else ""

    def _exit_text(self) -> str:
        code = self.process.returncode
        if code is None:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def start_build(self) -> None:
        self._send_starting(Build())

    def finish_build(self) -> Optional[dict]:
        """The build's next answer: None where the worker began building, else, once built, the worker's facts."""
        reply = self._receive("build")
        if isinstance(reply, Building):
            return None
        self.facts = {**self.startup, **reply.facts}
        return self.facts

    def send(self, request: Any) -> None:
        """Send a request to the running worker; one whose process is gone is a :class:`WorkerError`."""
        try:
            self.conn.send(request)
        except (BrokenPipeError, OSError):
            raise WorkerError(f"{self.name}'s worker is gone ({self._exit_text()})") from None

    def block(self, label: str, calls: int, lead_in: int = 0) -> Block:
        self.send(TimeBlock(label, calls, lead_in))
        return self._receive(f"time {calls} call(s) at {label}")

    def check(self, label: str) -> CheckedCall:
        """The accuracy check's call at ``label``, made in the worker."""
        with tempfile.TemporaryDirectory(prefix="trtbench-check-") as folder:
            written = os.path.join(folder, "output.pt")
            self.send(Check(label, written))
            checked = self._receive(f"check the output at {label}")
            # weights_only=False: the file is our own worker's
            return dataclasses.replace(checked, output=torch.load(written, weights_only=False))

    def refresh_facts(self) -> dict:
        """The worker's facts with its peak RSS so far."""
        self.send(Facts())
        self.facts["peak_rss_mb"] = self._receive("facts").mb
        return self.facts

    def kill(self) -> None:
        """End the process, then remove what it left in its temporary folder."""
        self.process.kill()  # a no-op once it has exited (Popen polls first)
        self._reap(5)
        self.temp.cleanup()

    def ask_exit(self) -> None:
        """Ask the worker to exit (:meth:`close` waits for it)."""
        with contextlib.suppress(OSError):  # BrokenPipeError among them
            self.conn.send(Exit())

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        self.ask_exit()
        self._reap(10)
        self.kill()
        self.conn.close()


def close_workers(workers: list[Worker]) -> None:
    """Close ``workers``, all asked to exit first so that they shut down at once."""
    for worker in workers:
        worker.ask_exit()
    for worker in workers:
        worker.close()


class WorkerTimer:
    """A :class:`~trtbench.measure.timing.BlockTimer` for one point of one worker."""

    def __init__(self, worker: Worker, label: str):
        self.worker, self.label = worker, label

    def block(self, calls: int, lead_in: int = 0) -> Block:
        return self.worker.block(self.label, calls, lead_in)


def spawn_workers(count: int, timeout_s: float, log_dir: Optional[Path] = None, knobs: Knobs = Knobs(),
                  threads: int = 1, at_once: bool = False) -> list[Worker]:
    """``count`` workers started with ``knobs`` (``at_once``: each bound to its own cores), logs in ``log_dir``."""
    return [Worker(f"worker {i}", timeout_s, log_dir / f"worker-{i}.log" if log_dir else None,
                   worker_env(knobs, threads, i if at_once else 0)) for i in range(count)]


@dataclasses.dataclass
class _Building:
    """A worker asked to build: when asked, and when it began (its imports done; None: not yet)."""

    name: str
    asked: float
    began: Optional[float] = None

    def deadline(self, timeout_s: float, max_build_s: Optional[float]) -> float:
        """When it is killed: ``timeout_s`` after it was asked, or ``max_build_s`` after it began, if sooner."""
        return min(self.asked + timeout_s, self._limit(max_build_s))

    def _limit(self, max_build_s: Optional[float]) -> float:
        return self.began + max_build_s if self.began is not None and max_build_s is not None else math.inf

    def overdue(self, timeout_s: float, max_build_s: Optional[float]) -> WorkerError:
        """Why it was killed: over ``max_build_s`` where that came first (:class:`BuildTooSlow`), else the timeout."""
        if self._limit(max_build_s) <= self.asked + timeout_s:
            return BuildTooSlow(f"built in more than max_build_s={max_build_s:g} s: {self.name}'s worker was still "
                                f"building at the limit and was killed (benchmark.max_build_s)")
        return WorkerError(f"{self.name}'s worker did not finish building within {timeout_s:g} s "
                           f"(benchmark.worker_timeout_s) and was killed")


def start_workers(recipes: dict[str, Recipe], spawned: list[Worker], parallel: int = 2,
                  max_build_s: Optional[float] = None,
                  handlers: tuple[ModuleType, ...] = ()) -> tuple[dict[str, Worker], dict[str, WorkerError]]:
    """Build each recipe on one of ``spawned``, ``parallel`` at once; the ready workers, and why not for the others."""
    workers: dict[str, Worker] = {}
    building: dict[Connection, _Building] = {}
    ready: dict[str, Worker] = {}
    errors: dict[str, WorkerError] = {}
    timeout_s = spawned[0].timeout_s if spawned else 0.0
    try:
        for worker in spawned[len(recipes):]:
            worker.close()
        for (name, recipe), worker in zip(recipes.items(), spawned):
            workers[name] = worker
            try:
                worker.assign(name, recipe, handlers)
            except WorkerError as err:
                errors[name] = err
        waiting = [name for name in workers if name not in errors]
        while waiting or building:
            while waiting and len(building) < parallel:
                name = waiting.pop(0)
                try:
                    workers[name].start_build()
                except WorkerError as err:
                    errors[name] = err
                    continue
                building[workers[name].conn] = _Building(name, time.monotonic())
            if not building:
                break
            deadline = min(b.deadline(timeout_s, max_build_s) for b in building.values())
            answered = wait(list(building), timeout=max(0.0, deadline - time.monotonic()))
            overdue = [c for c, b in building.items() if time.monotonic() >= b.deadline(timeout_s, max_build_s)]
            for conn in set(answered) | set(overdue):
                build = building[conn]
                if conn not in answered:
                    del building[conn]
                    workers[build.name].kill()
                    errors[build.name] = build.overdue(timeout_s, max_build_s)
                    continue
                try:
                    if workers[build.name].finish_build() is None:  # it began building: the build's clock starts
                        build.began = time.monotonic()
                        continue
                    ready[build.name] = workers[build.name]
                except WorkerError as err:
                    errors[build.name] = err
                    workers[build.name].close()
                del building[conn]
    except BaseException:
        for worker in spawned:
            worker.close()
        raise
    return ready, errors
