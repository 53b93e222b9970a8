"""Plain-language text for what can go wrong while issuing, for the GUI and the CLI alike.

Messages name codes, fields and request ids, never values: a payslip's amounts and the employee's
data must not end up in a dialog that is screenshotted into a support ticket.
"""

from __future__ import annotations

from app.api.errors import ApiError, ClientCode, unreachable_words
from app.issuer.journal import JournalError
from app.issuer.pii import PiiTextError
from app.issuer.run.results import RunInterrupted
from app.issuer.run.rows import PayrunFileError
from app.output.files import OutputError
from service.protocol.errors import ErrorCode
from service.protocol.schemas import SchemaValidationError
from service.protocol.sealing import EncryptionKeyError

ISSUER_ERRORS: dict[str, str] = {  # keyed by the wire codes and the client's own
    ErrorCode.VALIDATION_FAILED: "The service refused the payslip data.",
    ErrorCode.UNAUTHORIZED: "The issuer credentials were refused. Check the client id and secret.",
    ErrorCode.FORBIDDEN: "These credentials may not register payslips (is it an issuer client?).",
    ErrorCode.CONFLICT: "This reference is already registered with different data.",
    ErrorCode.IV_REUSED: (
        "This encryption was used before; the payslip is encrypted afresh next time."
    ),
    ErrorCode.PAYLOAD_TOO_LARGE: "The payslip is too large for the service.",
    ErrorCode.RATE_LIMITED: "The service is busy; try again in a moment.",
    ErrorCode.SERVICE_UNAVAILABLE: "The service is temporarily unavailable; try again shortly.",
    ClientCode.SERVICE_UNREACHABLE: (
        "The service cannot be reached. Check the URL and the connection."
    ),
    ErrorCode.INTERNAL_ERROR: "The service had an internal problem. Try again, or contact support.",
    ErrorCode.NOT_FOUND: "No service answers at this URL (check the service URL).",
    ClientCode.INVALID_RESPONSE: "The service gave an answer this app does not understand.",
}


RETIRED_KEY = (
    "This payslip was encrypted with a key that has been retired, so the service no longer "
    "accepts it. In Admin, give this payroll provider a new key and tick “Use this key for "
    "issuing on this computer” (or enter the new key and its version under Details), then issue "
    "the payslip again."
)


def retired_key_words(exc: BaseException) -> str | None:
    """What to do when the service refused the payslip because its key version is retired."""
    if not isinstance(exc, ApiError):
        return None
    if exc.code == ErrorCode.KEY_VERSION_UNAVAILABLE and "retired" in exc.message:
        return RETIRED_KEY
    if exc.code != ErrorCode.VALIDATION_FAILED:
        return None
    for problem in exc.field_errors:
        if problem.path.endswith("key_version") and "retired" in problem.message:
            return RETIRED_KEY
    return None


def resend_helps(exc: BaseException) -> bool:
    """Whether pressing Issue again with the same prepared payslip can succeed: never for a
    refusal the payslip itself caused (a retired key, invalid data, wrong credentials)."""
    return isinstance(exc, ApiError) and exc.code in (
        ClientCode.SERVICE_UNREACHABLE,
        ErrorCode.SERVICE_UNAVAILABLE,
        ErrorCode.RATE_LIMITED,
        ErrorCode.INTERNAL_ERROR,
    )


def describe_error(exc: BaseException) -> str:
    """One line for the user about `exc`, without any personal data."""
    if isinstance(exc, ApiError):
        text = (
            unreachable_words(exc)
            or retired_key_words(exc)
            or ISSUER_ERRORS.get(exc.code, f"The service answered {exc.code}.")
        )
        if exc.field_errors and not retired_key_words(exc):
            text += " " + "; ".join(
                f"{fe.path or 'request'}: {fe.message}" for fe in exc.field_errors[:3]
            )
        if exc.request_id:
            text += f" (request id {exc.request_id})"
        return text
    if isinstance(exc, SchemaValidationError):
        return "Some fields need attention: " + exc.detail
    if isinstance(exc, PiiTextError):
        return f"Employee details: {exc.field} {exc.problem}"
    if isinstance(exc, EncryptionKeyError):
        return f"Encryption key: {exc}"
    if isinstance(exc, OutputError | PayrunFileError | JournalError | RunInterrupted):
        return str(exc)
    return f"Something went wrong ({type(exc).__name__})."
