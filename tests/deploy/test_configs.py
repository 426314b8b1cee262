"""Every ksmon config file shipped under deploy/ (each one a kustomize configMapGenerator
mounts into a pod) is a valid config: the agent would start with it."""

import pytest
import yaml

from agent.config.load import load_config
from tests.deploy.manifests import DEPLOY, kustomizations

# The secrets the shipped configs read as {env: ...}, as the pods' Secrets provide them.
ENV = {
    "POD_NAME": "ksmon-agent-0",
    "KSMON_KAFKA_PASSWORD": "from-the-secret",
    "KSMON_JOB_KAFKA_PASSWORD": "from-the-secret",
    # The sidecar component's Downward API resourceFieldRef (the app's limits.memory).
    "APP_MEMORY_LIMIT": "1073741824",
}
# The configs every deployment must ship (each kustomization's configMapGenerator).
SHIPPED = {
    "agent/config.yaml",
    "examples/one-namespace/job-config.yaml",
    "job/job.yaml",
}


def _config_files() -> list[str]:
    files = []
    for directory in kustomizations():
        kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
        for generator in kustomization.get("configMapGenerator", []):
            for entry in generator.get("files", []):
                source = entry.split("=", 1)[-1]
                files.append((directory / source).relative_to(DEPLOY).as_posix())
    return sorted(files)


def test_the_shipped_config_files_are_found() -> None:
    assert set(_config_files()) >= SHIPPED


@pytest.mark.parametrize("relative", _config_files())
def test_a_shipped_config_loads(relative: str) -> None:
    config = load_config(DEPLOY / relative, env=ENV)
    assert config.clusters
    assert config.http.port in {8479, 8480}
