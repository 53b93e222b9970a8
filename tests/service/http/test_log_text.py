"""What of a request a log line may hold (service.http.log_text, issue 37 #3): the rules alone,
fast; tests/service/hosting/test_logged_paths.py checks real servers' logs."""

from __future__ import annotations

import logging

from service.http.log_text import (
    PATH_CHARS,
    RedactingFilter,
    escaped,
    logged_method,
    logged_path,
    redacted_path,
)


def test_unrouted_paths_keep_only_short_plain_segments() -> None:
    assert redacted_path("/healthz") == "/healthz"
    assert redacted_path("/x/2|ref|ABCDEF") == "/x/…"
    assert redacted_path("/" + "A" * 25) == "/…"  # a base32 run
    assert redacted_path("/v1/records/2%7Cabc/revoke") == "/v1/records/…/revoke"
    assert redacted_path("/nope\nFORGED line") == "/…"
    assert len(redacted_path("/a" * 200)) == PATH_CHARS


def test_a_routed_request_is_logged_as_its_template() -> None:
    class Route:
        rule = "/v1/records/<reference>/revoke"

    environ = {"bottle.route": Route(), "PATH_INFO": "/v1/records/SECRET-REF/revoke"}
    assert logged_path(environ) == "/v1/records/<reference>/revoke"
    assert logged_method({"REQUEST_METHOD": "G\x1b[2KET"}) == "G\\x1b[2KET"


def test_control_characters_are_escaped() -> None:
    assert escaped("a\nb\rc\x00d\x7fe\x85f\u2028g") == "a\\x0ab\\x0dc\\x00d\\x7fe\\x85f\\u2028g"


def test_library_lines_are_redacted() -> None:
    record = logging.LogRecord(
        "gunicorn.error", logging.DEBUG, __file__, 1, "%s %s", ("GET", "/x/2|r|AAAA\nX"), None
    )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == "GET /x/…\\x0aX"  # the newline escaped: no second line
