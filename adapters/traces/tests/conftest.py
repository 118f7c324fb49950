import sys
from pathlib import Path

# VOX is not published: these tests, as the VOX adapter's, run against its model (vox_model/).
sys.path.insert(0, str(Path(__file__).parents[2] / "vox" / "tests" / "vox_model"))
