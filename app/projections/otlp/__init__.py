"""Sessions as OpenTelemetry traces by the GenAI semantic conventions (``spans.py``, ids from
the log: ``ids.py``), encoded as OTLP (``encoding.py``) and posted (``transport.py``); and the
live exporter that sends them as the log grows (``exporter.py``, ``live.py``). Here, below
``interchange``, because the live exporter is kept beside the projections."""
