"""A pytest plugin (``-p hide_modules``) that makes the top-level modules named in
``RBD_TEST_HIDE_MODULES`` (comma separated) impossible to import, as for packages that are
not installed: a finder first on ``sys.meta_path`` raises ModuleNotFoundError for them (and
``importlib.util.find_spec`` raises it too).  Used by test_oracle_skips.py and
colcon_like.py; it only affects the process it is loaded in."""
import importlib.abc
import os
import sys

HIDDEN = set(filter(None, os.environ.get("RBD_TEST_HIDE_MODULES", "").split(",")))


class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
