"""What a call cost by litellm's prices, computed once per call and never for nothing.

litellm prices each response itself as it returns it (``_hidden_params["response_cost"]``,
with the request's model, provider and parameters at hand); pricing it again cost as much
once more. A model litellm has no price for was worse: every call walked the whole price map
again before failing (~14 ms on a 2-core machine, more than the rest of the gateway's work).
Whether the map prices a model depends only on the model's name, so the names it does not
are remembered (per gateway) and such a call's cost is unknown at once.
"""

from __future__ import annotations

import math
from typing import Any


def _stamped(response: Any) -> float | None:
    """The cost litellm stamped on the response, when it priced it."""
    hidden = getattr(response, "_hidden_params", None)
    stamped = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(stamped, int | float) and not isinstance(stamped, bool):
        return float(stamped)
    return None


def litellm_cost(response: Any, unpriced: set[str]) -> float | None:
    """``response``'s cost by litellm's prices, or None (no price, or a count it rests on is
    not a number). ``unpriced`` holds the answering models found without a price, and grows."""
    import litellm  # loaded already: the response came from it

    cost = _stamped(response)
    if cost is None:
        model = str(getattr(response, "model", None))
        if model in unpriced:
            return None
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except litellm.ModelNotMappedError:
            unpriced.add(model)
            return None
        except Exception:  # odd usage, or litellm could not read the response
            return None
    return cost if math.isfinite(cost) else None  # odd usage must not make it unstorable
