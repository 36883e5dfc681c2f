"""A module that needs scipy at import (for tests/unit/test_no_torch.py)."""

import scipy  # noqa: F401
