"""Sessions bind a stream, an agent, a sandbox and their configuration under one id."""
