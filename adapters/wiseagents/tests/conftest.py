import sys
from pathlib import Path

# Wise Agents is not on PyPI: these tests run against the model of it in wiseagents_model/
# (see its README.md for what was compared with upstream's own code).
sys.path.insert(0, str(Path(__file__).parent / "wiseagents_model"))
sys.path.insert(0, str(Path(__file__).parent))
