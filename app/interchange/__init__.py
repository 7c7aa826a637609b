"""Other formats in and out: OpenTelemetry GenAI traces, ATIF trajectories."""
