"""The desk's settings and secrets (:mod:`.desk`) and the kiosk PIN's hash (:mod:`.pin_hash`):
the ground floor of the app, which every other part may read and none is read by."""
