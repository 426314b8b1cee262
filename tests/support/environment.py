"""How the suite treats a missing real component: skip locally, fail in CI."""

import os
from typing import NoReturn

import pytest


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(component: str, reason: object) -> NoReturn:
    """Skip the test because ``component`` cannot start, or fail it when ``CI=true``:
    in CI an integration test that cannot run is a red run, never a silent skip."""
    message = f"{component} is unavailable: {reason}"
    if running_in_ci():
        pytest.fail(f"{message} (CI=true: integration tests must not skip)", pytrace=False)
    pytest.skip(message)
