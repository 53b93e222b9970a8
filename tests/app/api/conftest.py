"""The fixtures of the ApiClient tests in this folder: the real service behind the fault
injector (`live`), a controllable clock (`fake_time`), clients made against them (`make_client`,
`issuer`, `verifier`) and one registered payslip (`registered`); see `faults.py`."""

from tests.app.api.faults import (  # noqa: F401 - pytest finds fixtures by their names here
    fake_time_fixture,
    issuer_fixture,
    live_fixture,
    make_client_fixture,
    registered_fixture,
    verifier_fixture,
)
