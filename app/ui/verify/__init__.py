"""The Verify screen's room: the screen (screen.py) and its parts: the pipeline, the result page
and card, the verdict panel and sound, the scan page, the camera (worker and feed), the USB
scanner, the service line and the record desk."""
