"""The sandbox image's build context and its action server, shipped as ``app.runtime_image``.

pyproject.toml maps this directory into the distribution; the code finds it with
``importlib.resources`` (app/runtime/image.py), in a checkout and in an installed wheel alike.
"""
