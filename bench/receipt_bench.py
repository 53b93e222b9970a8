"""What a receipt costs over a plain verification (issue 23), in-process on a TinyDB instance.

A receipt is a verification plus building its claims and one Ed25519 signature, so it should cost
a fraction more than verifyPayload, not a multiple. Prints the per-call times of both, measured in
the same run on the same record, and their ratio. Runs in a few seconds:

    python bench/receipt_bench.py [--calls 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    offline_config,
    open_store,
)
from service.domain.tokens import Principal
from service.protocol.schemas import RegisterNonPiiRequest, VerifyRequest
from testbed.factories import sealed_record


def _per_call(work: object, calls: int) -> float:
    assert callable(work)
    for _ in range(20):  # warm up (caches, key objects)
        work()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder) / "data"
        init_instance(data_dir)
        store = open_store(data_dir)
        try:
            domain = domain_for(store, offline_config(load_master_key(data_dir)))
            issuer = domain.admin.create_issuer("Bench Payroll")
            verifier = domain.admin.create_verifier("Bench Desk")
            sealed = sealed_record(issuer.encryption_key)
            principal = Principal(issuer.client_id, "issuer", issuer.issuer_id, "service:issuer")
            domain.registration.register_non_pii(
                principal, RegisterNonPiiRequest.model_validate(sealed.body)
            )
            request = VerifyRequest(barcode=sealed.payload)
            client = verifier.client_id
            verify = _per_call(
                lambda: domain.verification.verify_request(request, client), args.calls
            )
            receipt = _per_call(lambda: domain.receipts.issue(request, client), args.calls)
        finally:
            store.close()
    print(f"verifyPayload (domain)  {verify * 1e6:8.1f} us per call")
    print(f"receipt (domain)        {receipt * 1e6:8.1f} us per call")
    print(f"receipt / verify        {receipt / verify:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
