"""What pytest collects from the packages: every module but the old 0.2 module paths.

``semrag/index/dense.py`` and its siblings only warn and re-export (``semrag._moved``);
importing them for their doctests would be the deprecation warning, not a test.
"""

from semrag._moved import MOVED

collect_ignore = [f"{old.replace('.', '/')}.py" for old in MOVED]
