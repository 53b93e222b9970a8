"""Writing output files atomically, and the pay-run worker processes' jobs (badge + stamped PDF).

Outside `app.issuer` on purpose: a spawned worker imports only this package, not the issuer
library with its HTTP client and schemas."""
