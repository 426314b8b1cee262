"""podman for the image tests: the local Debian bases, the images built from
deploy/image/Dockerfile, and containers that are always removed.

Every build and run gets the runtime flags these machines need (runc, explicit
ulimits, the host network: the test broker listens on 127.0.0.1). Builds reach
PyPI and Maven Central with this machine's CA stores mounted read-only into the
build steps, never copied into an image.
"""

import contextlib
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.errors import SetupError

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "image" / "Dockerfile"
MAKE_BASES = REPO / "deploy" / "image" / "make-debian-bases"

RUNTIME_FLAGS = (
    "--runtime",
    "runc",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1024:1024",
    "--network",
    "host",
)
# What make-debian-bases makes, as the Dockerfile's base arguments.
LOCAL_BASES = {
    "PYTHON_IMAGE": "localhost/ksmon-base-python:bookworm",
    "JAVA_IMAGE": "localhost/ksmon-base-jre:bookworm",
}
CA_STORES = (Path("/etc/ssl/certs/ca-certificates.crt"), Path("/etc/ssl/certs/java/cacerts"))
_BUILD_TIMEOUT = 1800
_COMMAND_TIMEOUT = 120


def podman_problem() -> str | None:
    """Why podman cannot build and run images here, or None when it can."""
    if shutil.which("podman") is None:
        return "podman is not installed (make test-images installs it)"
    try:
        subprocess.run(["podman", "info"], capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"`podman info` failed: {_output_of(e)}"
    return None


def make_local_bases(log: Path) -> None:
    """make-debian-bases (which keeps the bases that exist already), its output in ``log``."""
    _run_logged([str(MAKE_BASES)], log, what="making the Debian base images")


def build_image(target: str, tag: str, log: Path, *, extras: str = "") -> str:
    """The Dockerfile's ``target`` built on the local bases as ``tag``, with ksmon's
    ``extras`` (the EXTRAS build argument); podman's layer cache makes a rebuild of
    unchanged sources quick."""
    command = ["podman", "build", *RUNTIME_FLAGS]
    if extras:
        command += ["--build-arg", f"EXTRAS={extras}"]
    for store in CA_STORES:
        if store.is_file():
            command += ["--volume", f"{store}:{store}:ro"]
    for name, image in LOCAL_BASES.items():
        command += ["--build-arg", f"{name}={image}"]
    command += ["--file", str(DOCKERFILE), "--target", target, "--tag", tag, str(REPO)]
    _run_logged(command, log, what=f"building the {target} image")
    return tag


def image_size(tag: str) -> int:
    """The image's size in bytes, as ``podman image inspect`` reports it."""
    return int(podman("image", "inspect", "--format", "{{.Size}}", tag))


def podman(*args: str) -> str:
    """A short podman command's standard output; SetupError with its output on failure."""
    try:
        done = subprocess.run(
            ["podman", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=_COMMAND_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise SetupError(f"podman {' '.join(args)} failed: {_output_of(e)}") from e
    return done.stdout.strip()


def run_once(image: str, *args: str, entrypoint: str | None = None) -> str:
    """Run a command in a fresh container of ``image`` and return its standard output."""
    override = ["--entrypoint", entrypoint] if entrypoint else []
    return podman("run", "--rm", *RUNTIME_FLAGS, *override, image, *args)


@dataclass(frozen=True)
class Container:
    name: str
    image: str

    def running(self) -> bool:
        try:
            return podman("container", "inspect", "--format", "{{.State.Running}}", self.name) == (
                "true"
            )
        except SetupError:
            return False

    def exited(self) -> str | None:
        """For ``wait_until(abort=...)``: why waiting on this container is pointless."""
        if self.running():
            return None
        return f"container {self.name} ({self.image}) stopped: {self.logs()[-3000:]}"

    def logs(self) -> str:
        try:
            done = subprocess.run(
                ["podman", "logs", self.name],
                capture_output=True,
                text=True,
                check=False,
                timeout=_COMMAND_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError) as e:
            return f"(no logs: {e})"
        return done.stdout + done.stderr

    def exec(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``podman exec`` as the container's own user; the caller checks the result."""
        return subprocess.run(
            ["podman", "exec", self.name, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=_COMMAND_TIMEOUT,
        )


@contextlib.contextmanager
def running_container(
    image: str,
    args: Sequence[str] = (),
    *,
    log: Path,
    user: str | None = None,
    read_only: bool = False,
    tmpfs: Sequence[str] = (),
    volumes: Mapping[Path, str] = {},
    env: Mapping[str, str] = {},
) -> Iterator[Container]:
    """A detached container, run with the restrictions a Kubernetes pod security
    context gives (no capabilities, no privilege escalation); removed on exit, its
    output kept in ``log``. ``volumes``: host path -> "container path[:ro]"."""
    name = f"ksmon-test-{uuid.uuid4().hex[:10]}"
    command = [
        "run",
        "--detach",
        "--name",
        name,
        *RUNTIME_FLAGS,
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
    ]
    if user is not None:
        command += ["--user", user]
    if read_only:
        command.append("--read-only")
    for path in tmpfs:
        command += ["--tmpfs", path]
    for source, target in volumes.items():
        command += ["--volume", f"{source}:{target}"]
    for key, value in env.items():
        command += ["--env", f"{key}={value}"]
    podman(*command, image, *args)
    container = Container(name, image)
    try:
        yield container
    finally:
        log.write_text(container.logs())
        with contextlib.suppress(SetupError):
            podman("rm", "--force", "--time", "10", name)


def _run_logged(command: Sequence[str], log: Path, *, what: str) -> None:
    with log.open("w") as out:
        try:
            done = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=_BUILD_TIMEOUT
            )
        except (OSError, subprocess.SubprocessError) as e:
            raise SetupError(f"{what}: {e}") from e
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise SetupError(f"{what} failed ({done.returncode}); the end of {log}:\n{tail}")


def _output_of(error: BaseException) -> str:
    if isinstance(error, subprocess.CalledProcessError):
        text = f"{error.stderr or ''}{error.stdout or ''}".strip()
        return text.splitlines()[-1] if text else f"exit status {error.returncode}"
    return str(error)
