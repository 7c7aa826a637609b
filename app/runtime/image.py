"""The sandbox image: tagged by a content hash of runtime_image/, built when missing.

Because the tag is the hash of the server code (and the base image), an image and the server
code it runs cannot drift apart: changing a file in runtime_image/ means a new tag.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
from pathlib import Path

import docker
import docker.errors

log = logging.getLogger(__name__)

REPOSITORY = "chronicle-sandbox"


def _shipped_runtime_image() -> Path:
    """runtime_image/ as shipped in the package (``app.runtime_image``, mapped by
    pyproject.toml): the Docker build context, and the local sandbox's server code."""
    found = importlib.resources.files("app.runtime_image")
    if not isinstance(found, Path):
        raise RuntimeError(
            f"app.runtime_image is not installed as files on disk ({found}); install "
            "Chronicle with pip into a directory, not as a zip"
        )
    return found


RUNTIME_IMAGE_DIR = _shipped_runtime_image()


def content_hash(base_image: str, root: Path = RUNTIME_IMAGE_DIR) -> str:
    """sha256 over the base image name and every file of runtime_image/ (paths and bytes)."""
    digest = hashlib.sha256(base_image.encode() + b"\0")
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def image_tag(base_image: str) -> str:
    return f"{REPOSITORY}:{content_hash(base_image)[:16]}"


def ensure_image(client: docker.DockerClient, base_image: str) -> tuple[str, str]:
    """The sandbox image's tag and id, building it from runtime_image/ when missing."""
    tag = image_tag(base_image)
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        log.info("building sandbox image %s from %s", tag, base_image)
        try:
            image, _ = client.images.build(
                path=str(RUNTIME_IMAGE_DIR), tag=tag, buildargs={"BASE_IMAGE": base_image}, rm=True
            )
        except docker.errors.BuildError as exc:
            detail = "".join(
                str(item.get("stream", item.get("error", ""))) for item in exc.build_log
            )
            raise RuntimeError(
                f"building the sandbox image from {base_image} failed: {exc.msg}\n{detail[-2000:]}"
            ) from None
    return tag, str(image.id)
