#!/bin/sh
# Run once while the sandbox image is built (as root): make the base a usable dev box.
# `python` is Python 3 (recorded agents call `python`), with pip, git, patch, curl, grep, find
# and sed. A base that has them all (scripts/build-base-image makes one) needs no network
# here; one that lacks some gets them from its own apt sources if it can, and otherwise the
# build fails naming what is missing.
set -u
base=${1:-the base image}
tools="python3:python3 pip:python3-pip git:git patch:patch curl:curl grep:grep find:findutils"
tools="$tools sed:sed bash:bash"

missing=""
for pair in $tools; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
if [ -n "$missing" ] && command -v apt-get >/dev/null 2>&1; then
    echo "$base lacks:$missing; trying apt-get"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $missing; } || echo "apt-get could not install them"
    rm -rf /var/lib/apt/lists/*
fi

# `python` and `pip` under the names agents use.
python3=$(command -v python3 || true)
pip3=$(command -v pip3 || true)
if ! command -v python >/dev/null 2>&1 && [ -n "$python3" ]; then
    ln -s "$python3" /usr/local/bin/python
fi
if ! command -v pip >/dev/null 2>&1 && [ -n "$pip3" ]; then
    ln -s "$pip3" /usr/local/bin/pip
fi
# pip may install (as the sandbox user, into its home): the sandbox is the environment to
# change, so Debian's "externally managed" marker goes.
rm -f /usr/lib/python3*/EXTERNALLY-MANAGED

lacking=""
for tool in python python3 pip git patch curl grep find sed bash; do
    command -v "$tool" >/dev/null 2>&1 || lacking="$lacking $tool"
done
if [ -n "$lacking" ]; then
    echo "$base lacks$lacking, and apt-get could not add them. Build a base that has them" \
        "with scripts/build-base-image (no registry needed) and set sandbox_base_image" \
        "(CHRONICLE_SANDBOX_BASE_IMAGE) to the tag it prints." >&2
    exit 1
fi
