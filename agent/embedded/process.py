"""Start and stop the JVMs ksmon runs locally, and never leave one behind.

Each JVM gets its own session (process group), so a Ctrl-C in the terminal
reaches ksmon first and ksmon stops its children in order; and, unless it is
meant to outlive ksmon (``ksmon kafka start``), the kernel kills it when its
parent dies (``PR_SET_PDEATHSIG``), so even a ``kill -9`` of the test runner
leaves no broker or Streams app running.
"""

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    # The signal fires when the parent *thread* exits, so JVMs that use this
    # must be spawned from a long-lived thread (ksmon spawns from the main one).
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class JvmProcess:
    """One local JVM: its command line, its log file, and its lifecycle."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        die_with_parent: bool = True,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._die_with_parent = die_with_parent
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def start(self) -> None:
        if self.alive:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            out.write(f"\n=== ksmon starting {self.name}: {' '.join(self.argv)}\n".encode())
            out.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if self._die_with_parent else None,  # noqa: PLW1509
            )
        log.debug("started %s (pid %s)", self.name, self.pid)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (the JVM runs its shutdown hooks), then SIGKILL after ``timeout``."""
        if not self._popen:
            return
        if self._popen.poll() is None:
            _signal_group(self._popen.pid, signal.SIGTERM)
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %.0fs; killing it", self.name, timeout)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the whole process group, as ``kill -9`` would, and reap it."""
        if not self._popen:
            return
        _signal_group(self._popen.pid, signal.SIGKILL)
        self._popen.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    abort: Callable[[], str | None] | None = None,
) -> None:
    """Poll ``condition`` until it is true; raise TimeoutError naming ``what`` otherwise.

    ``abort`` is checked on every round and may return a reason to give up
    early (a process that died, say), which is raised as RuntimeError.
    """
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if abort is not None:
            reason = abort()
            if reason:
                raise RuntimeError(f"gave up waiting for {what}: {reason}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
