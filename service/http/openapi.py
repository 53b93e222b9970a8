"""The OpenAPI 3.1 document, generated from the route declarations (`service.http.routes`) and
the protocol's models: the request models that validate bodies and the response models the
domain returns (`service.protocol.schemas`).

No route, shape or error code is written here. Each route names the models it takes and answers
with and the `ErrorCode`s it can answer with; the statuses and titles are the codes' own, and
every error response's schema is the protocol's `ErrorBody` narrowed to those codes (spec
"Errors": allowed `code` values per error response).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from service.composition.config import ServiceConfig
from service.http.route import Route
from service.http.routes import ROUTES, UNROUTED
from service.protocol import schemas
from service.protocol.errors import ErrorBody, ErrorCode
from service.protocol.schemas.openapi import REF_TEMPLATE, WireJsonSchema


def error_components() -> dict[str, Any]:
    """`components.schemas` for the error object: `Error` (the protocol's `ErrorBody`),
    `ErrorCode` (every code, with its status and title) and `FieldError`."""
    schema = ErrorBody.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=WireJsonSchema)
    found: dict[str, Any] = schema.pop("$defs", {})
    schema.pop("title", None)
    schema["description"] = (
        "The error object of every non-2xx response. Clients branch on `code`; `error` and "
        "`detail` are human text that may change (on /oauth/token `error` is OAuth's error value)."
    )
    found["ErrorCode"]["description"] = "; ".join(
        f"{code} ({code.status}): {code.summary}" for code in ErrorCode
    )
    found["FieldError"].pop("title", None)
    found["FieldError"]["description"] = (
        "`path` is dot-and-index (`payslip_non_pii.earnings.0.amount_cents`), empty for the body."
    )
    return {"Error": schema, **found}


def error_responses(codes: Iterable[ErrorCode]) -> dict[str, Any]:
    """One response per status, naming the codes it carries and allowing only those."""
    by_status: dict[int, list[ErrorCode]] = {}
    for code in codes:
        if code not in by_status.setdefault(code.status, []):
            by_status[code.status].append(code)
    return {str(status): _error_response(found) for status, found in sorted(by_status.items())}


def _error_response(codes: list[ErrorCode], when: str = "") -> dict[str, Any]:
    text = " or ".join(codes)
    if when:
        text = f"{when}: {text}"
    if any(code.retry_after for code in codes):
        text += " (Retry-After)"
    schema = {
        "allOf": [_ref("Error")],
        "properties": {"code": {"enum": [str(code) for code in codes]}},
    }
    return {"description": text, "content": {"application/json": {"schema": schema}}}


ANY_OBJECT = {"type": "object"}
"""The one success body without a model: `/openapi.json`, this document itself."""

Body = type[BaseModel] | None


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schema(model: Body) -> dict[str, Any]:
    return ANY_OBJECT if model is None else _ref(model.__name__)


def _operation(route: Route) -> dict[str, Any]:
    """The operation for one route: its success and error responses, body and security."""
    responses: dict[str, Any] = {
        str(status): {
            "description": "success",
            "content": {"application/json": {"schema": _schema(route.response)}},
        }
        for status in route.statuses
    }
    responses.update(error_responses(route.error_codes))
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "responses": responses,
    }
    if route.description:
        operation["description"] = route.description
    if route.request is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema(route.request)}},
        }
    if route.scope:
        operation["security"] = [{"bearer": [route.scope]}]
    if route.parameters:
        operation["parameters"] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in route.parameters
        ]
    return operation


def _paths() -> dict[str, Any]:
    """Every API route, in declaration order, under its path and method."""
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.template, {})[route.method.lower()] = _operation(route)
    return paths


def build_openapi(config: ServiceConfig) -> dict[str, Any]:
    """The document for this instance's public address. Only `servers` depends on the
    instance: the rest is generated once per process (pydantic's schema generation costs about
    70 ms, and every server start, the app's embedded one too, builds a document) and each
    caller gets its own copy, which it may change."""
    paths_and_components = json.loads(_same_for_every_instance())
    return {
        "openapi": "3.1.0",
        "info": {"title": "Payslip Verify", "version": "1"},
        "servers": [{"url": config.public_url}],
        **paths_and_components,
    }


@functools.cache
def _same_for_every_instance() -> str:
    """`paths` and `components` as JSON text (a copy is one `json.loads`)."""
    components = schemas.openapi_components()
    components.update(schemas.response_components())
    components.update(error_components())
    document = {
        "paths": _paths(),
        "components": {
            "schemas": components,
            "responses": {
                name: _error_response([code], when) for name, (code, when) in UNROUTED.items()
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
    return json.dumps(document)
