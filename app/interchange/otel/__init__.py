"""A session as an OpenTelemetry trace, following the GenAI semantic conventions v1.41.1
(``spans.py``), with ids derived from the log so a re-export gives the same ids (``ids.py``)."""
