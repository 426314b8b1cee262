"""Fetching from the Go module proxy: a module that does not hash to its pin is
refused, and go's failures become one line that says whether the proxy was
unreachable."""

from pathlib import Path

import pytest

from agent.errors import SetupError, UnreachableError
from tests.support.go_modules import GoModule, explain_failure, module_source
from tests.support.kustomize import KUSTOMIZE


def test_a_module_that_does_not_match_its_pinned_hash_is_refused(kustomize: Path) -> None:
    """kustomize's module is in the cache by now (the fixture built it): only the pin differs."""
    assert module_source(KUSTOMIZE).is_dir()
    repinned = GoModule(KUSTOMIZE.path, KUSTOMIZE.version, "h1:" + "A" * 43 + "=")
    with pytest.raises(SetupError, match="is pinned: refusing a module that changed"):
        module_source(repinned)


# Each case: go's output, and whether it means the proxy could not be reached.
OUTPUTS = [
    pytest.param(
        'go: sigs.k8s.io/x@v1: Get "https://proxy.golang.org/...": dial tcp: lookup '
        "proxy.golang.org: no such host",
        True,
        id="DNS failure",
    ),
    pytest.param("go: example.com/x@v1: i/o timeout", True, id="timeout"),
    pytest.param(
        "go: example.com/x@v9.9.9: reading https://proxy.golang.org/...: 404 Not Found",
        False,
        id="no such version: reachable, wrong pin",
    ),
]


@pytest.mark.parametrize(("output", "unreachable"), OUTPUTS)
def test_go_failures_are_one_line(output: str, unreachable: bool) -> None:
    error = explain_failure("downloading example.com/x@v1", "go: downloading\n" + output + "\n")
    assert isinstance(error, UnreachableError) is unreachable
    assert "\n" not in str(error)
    assert output.rsplit(": ", 1)[-1] in str(error)
