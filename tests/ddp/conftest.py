import pathlib
import sys

# ranks.py and oracle.py are imported by name by the tests here (and by path
# in the ranks' processes).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
