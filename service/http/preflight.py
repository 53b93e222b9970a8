"""What the server may decide from a request's head, before it reads a byte of the body.

PROTOCOL §6 checks a route's body limit before and while the body is read. A server that first
buffers whatever the client sends (waitress reads whole bodies before calling the app) would let
anyone without a token make it hold megabytes per connection. So the HTTP server asks this
module as soon as the headers are in: for the matched route, the same checks the request
pipeline makes first (bearer token and scope, media type, declared length), and the byte limit
to hold a streamed (chunked) body to. The checks themselves are the pipeline's
(`ApiPlugin.refusal_before_body`), which makes every check again, counting, on the request it
is handed; this only refuses earlier, with the same error object. The server calls it on its I/O
thread, so it judges tokens by the signing keys as last read (kept recent by
service.hosting.keys_keeper) and reads the store only to refuse a request early: then the client's
state, so that a disabled client is told so first. A disabled client's token with nothing else
wrong is refused by the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import bottle

from service.domain.errors import ServiceError
from service.http.pipeline import ApiPlugin

UNROUTED_LIMIT = 64 * 1024
"""Paths and methods with no route, and routes that take no body, never read more than this."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """`limit`: the most body bytes to read; `refusal`: answer this instead, reading nothing."""

    limit: int
    refusal: ServiceError | None = None


Preflight = Callable[[str, str, str, Mapping[str, str]], Verdict]
"""(method, path, client address, headers in CGI form: CONTENT_TYPE, CONTENT_LENGTH,
AUTHORIZATION) -> Verdict"""


def build_preflight(app: bottle.Bottle, plugin: ApiPlugin) -> Preflight:
    def preflight(method: str, path: str, remote: str, headers: Mapping[str, str]) -> Verdict:
        try:
            route, _ = app.router.match({"REQUEST_METHOD": method, "PATH_INFO": path or "/"})
        except bottle.HTTPError:
            return Verdict(UNROUTED_LIMIT)
        config = route.config
        limit = int(config.get("body_limit") or config.get("preflight_limit") or UNROUTED_LIMIT)
        return Verdict(limit, plugin.refusal_before_body(config, remote, headers, limit))

    return preflight
