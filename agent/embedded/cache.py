"""Where the embedded broker and the fixture builds keep their files: ksmon's own
directories (:mod:`agent.paths`), named here for this package's modules."""

from agent.paths import cache_dir, ensure_built, state_dir

__all__ = ["cache_dir", "ensure_built", "state_dir"]
