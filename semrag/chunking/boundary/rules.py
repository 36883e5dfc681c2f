"""How a document's gap probabilities become breaks (torch-free, shared by chunker and training)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError

__all__ = ["BREAK_RULES", "check_rule", "gap_breaks"]

BREAK_RULES = ("threshold", "valley")
"""How gap probabilities become breaks (see :func:`gap_breaks`)."""


def check_rule(rule: str, where: str = "") -> str:
    """``rule`` if it is one of :data:`BREAK_RULES`.

    Raises:
        ConfigError: naming ``where`` (e.g. the class) and the rules there are.
    """
    if rule not in BREAK_RULES:
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"{prefix}rule must be one of {list(BREAK_RULES)}, got {rule!r}")
    return rule


def gap_breaks(
    probs: npt.ArrayLike, threshold: float, rule: str = "threshold"
) -> npt.NDArray[np.bool_]:
    """Which gaps of one document break, from p(same section) at each gap in order.

    * ``"threshold"``: every gap with p below ``threshold`` (the paper's rule).
    * ``"valley"``: a gap with p below ``threshold`` that is also a local minimum of the
      document's curve (no neighbour lower; of equal neighbours, the first), as TextTiling
      picks depth peaks. Two gaps next to each other never both break, so a run of low
      probabilities (a passage the encoder finds unlike its neighbours both ways) gives one
      break, not a chunk of one sentence.

    Raises:
        ConfigError: on an unknown rule.
    """
    check_rule(rule)
    p = np.asarray(probs, dtype=np.float64)
    low = p < threshold
    if rule == "threshold" or p.size < 2:
        return low
    before = np.concatenate([[np.inf], p[:-1]])
    after = np.concatenate([p[1:], [np.inf]])
    return low & (p < before) & (p <= after)
