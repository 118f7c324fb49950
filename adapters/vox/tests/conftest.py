import sys
from pathlib import Path

# VOX is not published: the tests run against the model of it in vox_model/ (see its __init__).
sys.path.insert(0, str(Path(__file__).parent / "vox_model"))
