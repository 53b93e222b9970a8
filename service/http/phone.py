"""The phone page: what a badge's link opens (`/v`, `/v/<anything>`) and its assets. (Pairing a
phone is API: `service.http.routes`.)

The page is one HTML document, one stylesheet and one script module, all shipped inside the
package (`service/http/phone_page/`) and read once at start-up: nothing comes from the data
directory or a CDN, so it works on a LAN without internet. The HTML is the same for every scan
URL form; the script reads the code from the browser's own address (the fragment never reaches
a server) and sends it only in the body of `POST /v1/verifications/payload`.

Security headers: every response of the service gets `X-Content-Type-Options: nosniff` and
`Referrer-Policy: no-referrer`; HTML additionally gets a strict Content-Security-Policy (no
inline script or style, no framing) and `Cache-Control: no-store`.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import bottle

from service.composition.config import ServiceConfig
from service.http.errors import SECURITY_HEADERS

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
BASE_HEADERS = SECURITY_HEADERS
HTML_HEADERS = {
    **BASE_HEADERS,
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Content-Type": "text/html; charset=utf-8",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str


ASSETS: dict[str, str] = {
    "verify.js": "text/javascript; charset=utf-8",
    "format.js": "text/javascript; charset=utf-8",
    "verify.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
"""The only files the asset route serves, by exact name: a fixed list, never a path."""


def _read(name: str) -> bytes:
    return resources.files("service.http").joinpath("phone_page", name).read_bytes()


def instance_label(config: ServiceConfig) -> str:
    """How the page names this instance to a signed-out visitor: the public host (what the
    badge's link showed them), so it says nothing the link did not."""
    return urlsplit(config.public_url).netloc or config.public_url


def _fill(template: str, values: dict[str, str]) -> bytes:
    text = template
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", html.escape(value, quote=True))
    return text.encode("utf-8")


def _html(body: bytes, status: int = 200) -> bytes:
    response = bottle.response
    response.status = status
    for key, value in HTML_HEADERS.items():
        response.set_header(key, value)
    return body


def wants_html(environ: dict[str, Any]) -> bool:
    """A browser navigating (Accept lists text/html before any JSON); API clients never do."""
    accept = str(environ.get("HTTP_ACCEPT", "")).lower()
    if "text/html" not in accept:
        return False
    json_at = accept.find("application/json")
    return json_at < 0 or accept.find("text/html") < json_at


class PhonePages:
    """The rendered page and the not-found page, built once per app."""

    def __init__(self, config: ServiceConfig) -> None:
        values = {"instance": instance_label(config), "audience": config.verifier_url}
        self.page = _fill(_read("verify.html").decode("utf-8"), values)
        self.not_found = _fill(_read("not_found.html").decode("utf-8"), values)
        self.assets = {name: Asset(_read(name), kind) for name, kind in ASSETS.items()}


def add_phone_routes(app: bottle.Bottle, config: ServiceConfig) -> PhonePages:
    pages = PhonePages(config)
    plain = {"skip": ["payslip_api"]}

    def page(rest: str = "") -> bytes:
        return _html(pages.page)

    def asset(name: str) -> bytes:
        found = pages.assets.get(name)
        if found is None:
            raise bottle.HTTPError(404)
        response = bottle.response
        for key, value in BASE_HEADERS.items():
            response.set_header(key, value)
        response.set_header("Content-Type", found.content_type)
        response.set_header("Cache-Control", "no-cache")
        return found.body

    app.route("/v", "GET", page, **plain)
    app.route("/v/", "GET", page, **plain)
    app.route("/v/<rest:path>", "GET", page, **plain)
    app.route("/assets/<name>", "GET", asset, **plain)

    def security_headers() -> None:
        for key, value in BASE_HEADERS.items():
            bottle.response.set_header(key, value)

    app.add_hook("after_request", security_headers)
    return pages


def browser_aware_not_found(
    pages: PhonePages, json_handler: Callable[[bottle.HTTPError], str]
) -> Callable[[bottle.HTTPError], bytes | str]:
    """404s: a small HTML page for a browser, the JSON error object for everyone else."""

    def handler(error: bottle.HTTPError) -> bytes | str:
        if wants_html(bottle.request.environ):
            return _html(pages.not_found, 404)
        return json_handler(error)

    return handler
