"""The interchange's queries of the log (which sessions an export takes)."""
