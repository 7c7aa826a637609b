"""OpenTelemetry traces in and out: whole sessions sent to a collector (``export.py``, over
the mapping of ``app/projections/otlp``), and traces received and settled into sessions
(``received.py``, ``received_events.py``, ``receiving.py``)."""
