"""The images the tests run, built once a session with podman from
deploy/image/Dockerfile on Debian bases made from Debian packages."""

from pathlib import Path

import pytest

from agent.errors import SetupError
from tests.image.podman import build_image, make_local_bases, podman_problem
from tests.support.environment import unavailable

AGENT_IMAGE = "localhost/ksmon:tests"
JOB_IMAGE = "localhost/ksmon-job:tests"
AGENT_MSK_IMAGE = "localhost/ksmon-msk:tests"


@pytest.fixture(scope="session")
def image_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("image-logs")


@pytest.fixture(scope="session")
def local_bases(image_logs: Path) -> None:
    problem = podman_problem()
    if problem is not None:
        unavailable("podman", problem)
    try:
        make_local_bases(image_logs / "bases.log")
    except SetupError as e:
        unavailable("the Debian base images (mmdebstrap from a Debian mirror)", e)


@pytest.fixture(scope="session")
def agent_image(local_bases: None, image_logs: Path) -> str:
    try:
        return build_image("agent", AGENT_IMAGE, image_logs / "agent-build.log")
    except SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def job_image(local_bases: None, image_logs: Path) -> str:
    try:
        return build_image("job", JOB_IMAGE, image_logs / "job-build.log")
    except SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def agent_msk_image(local_bases: None, image_logs: Path) -> str:
    """The agent image with the msk extra (``--build-arg EXTRAS=msk``)."""
    try:
        return build_image(
            "agent", AGENT_MSK_IMAGE, image_logs / "agent-msk-build.log", extras="msk"
        )
    except SetupError as e:
        pytest.fail(str(e), pytrace=False)
