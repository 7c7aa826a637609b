"""Replay: re-feed a recorded session into the real agent and controller without calling the
model or touching a sandbox, and name the first step where the agent behaves differently.

``canonical`` and ``requests`` compare (pure); ``divergence`` types what they find;
``recording`` reads a recorded session; ``gateway`` and ``answers`` serve it; ``engine``
runs a replay as a session of its own (``replay``).
"""
