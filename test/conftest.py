import os
import sys

# test helpers (oracle.py) are imported as top-level modules
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
