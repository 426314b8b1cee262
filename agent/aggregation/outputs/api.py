"""The job's JSON API as the HTTP server asks for it (``http.Answers``): the answers of
the current view, its index made once per view.

The batch thread replaces the latest view (``latest``) once per micro-batch and never changes
one; requests of the same view share its index (made at the first request that sees
it, as ``JobExposition`` writes /metrics), and each request makes its own body from it.
"""

import threading
from collections.abc import Mapping

from agent.aggregation.outputs.api_view import ApiIndex, answer, index_of
from agent.aggregation.outputs.latest import JobView, LatestView


class JobApi:
    def __init__(self, latest: LatestView) -> None:
        self.latest = latest
        self._lock = threading.Lock()
        # The view indexed last (kept, so its identity cannot be another view's).
        self._indexed: tuple[JobView, ApiIndex] | None = None

    def get(self, path: str, query: Mapping[str, list[str]]) -> tuple[int, object]:
        return answer(self.index(), path, query)

    def index(self) -> ApiIndex:
        view = self.latest.view()
        with self._lock:
            if self._indexed is None or self._indexed[0] is not view:
                self._indexed = (view, index_of(view))
            return self._indexed[1]
