"""The sandbox action server: executes actions inside a sandbox and answers with observations.

Standard library only, so it runs with any image's ``python3`` and needs no network to build.
The same server runs as a local subprocess, inside a Docker container, or behind a URL.
"""

PROTOCOL_VERSION = 1
