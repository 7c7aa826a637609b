"""Proving the log was not rewritten: ``verification`` re-hashes sessions, prompt messages and
blobs; ``anchors`` signs sessions' heads and checks them; ``anchor_key`` keeps the signing key
outside the database."""
