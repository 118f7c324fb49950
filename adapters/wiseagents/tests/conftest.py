import os
import sys
from pathlib import Path

# Wise Agents is not on PyPI: these tests run against the model of it in wiseagents_model/
# (see its README.md for what was compared with upstream's own code). With
# WISEAGENTS_UPSTREAM=<a wise-agents checkout>/src they run against upstream's own code instead,
# its start-up imports of langchain/gradio (which nothing here uses) stubbed as
# check_against_upstream.py does; keep that checkout outside this repository.
HERE = Path(__file__).parent
MODEL = HERE / "wiseagents_model"
upstream = os.environ.get("WISEAGENTS_UPSTREAM")
if upstream:
    sys.path.insert(0, str(MODEL))
    import check_against_upstream

    sys.path.remove(str(MODEL))
    sys.meta_path.insert(0, check_against_upstream._StubFinder())
    sys.path.insert(0, upstream)
else:
    sys.path.insert(0, str(MODEL))
sys.path.insert(0, str(HERE))

import wiseagents  # noqa: E402

if upstream:
    assert wiseagents.__file__.startswith(upstream), wiseagents.__file__
