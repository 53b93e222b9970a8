"""The one HTTP client for the Issuer, Verifier and Admin APIs (spec, PROTOCOL §6-§8), by concern:

* `app.api.auth`: the bearer token (an `httpx.Auth` that caches it and retries once after a 401);
* `app.api.retry`: when to resend, backoff honouring Retry-After, the one deadline per call;
* `app.api.exchange`: one logical call on the wire, typed errors that never hold secrets;
* `app.api.client`: `ApiClient`, the operations (verify, register, revoke, admin, pairing).

The typed errors live in `app.api.errors` and are re-exported here, so callers import one name.
"""

from app.api import errors as _errors
from app.api.client import SCOPE_ADMIN, SCOPE_ISSUER, SCOPE_VERIFIER, ApiClient
from app.api.errors import *  # noqa: F403 - the typed errors, as `app.api.errors.__all__` lists them

__all__ = ["SCOPE_ADMIN", "SCOPE_ISSUER", "SCOPE_VERIFIER", "ApiClient", *_errors.__all__]
