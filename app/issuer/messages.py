"""Plain-language text for what can go wrong while issuing, for the GUI and the CLI alike.

Messages name codes, fields and request ids, never values: a payslip's amounts and the employee's
data must not end up in a dialog that is screenshotted into a support ticket.
"""

from __future__ import annotations

from app.api_errors import ApiError
from app.issuer.journal import JournalError
from app.issuer.output import OutputError
from app.issuer.payrun import PayrunFileError
from app.issuer.pii import PiiTextError
from app.issuer.runner import RunInterrupted
from app.issuer.sealing import EncryptionKeyError
from service.protocol.schemas import SchemaValidationError

ISSUER_ERRORS: dict[str, str] = {
    "VALIDATION_FAILED": "The service refused the payslip data.",
    "UNAUTHORIZED": "The issuer credentials were refused. Check the client id and secret.",
    "FORBIDDEN": "These credentials may not register payslips (is it an issuer client?).",
    "CONFLICT": "This reference is already registered with different data.",
    "IV_REUSED": "This encryption was used before; the payslip is encrypted afresh next time.",
    "PAYLOAD_TOO_LARGE": "The payslip is too large for the service.",
    "RATE_LIMITED": "The service is busy; try again in a moment.",
    "SERVICE_UNAVAILABLE": "The service is temporarily unavailable; try again shortly.",
    "SERVICE_UNREACHABLE": "The service cannot be reached. Check the URL and the connection.",
    "INTERNAL_ERROR": "The service had an internal problem. Try again, or contact support.",
    "NOT_FOUND": "No service answers at this URL (check the service URL).",
    "INVALID_RESPONSE": "The service gave an answer this app does not understand.",
}


def describe_error(exc: BaseException) -> str:
    """One line for the user about `exc`, without any personal data."""
    if isinstance(exc, ApiError):
        text = ISSUER_ERRORS.get(exc.code, f"The service answered {exc.code}.")
        if exc.field_errors:
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
