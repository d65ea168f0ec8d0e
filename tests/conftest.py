import os
import sys

# Test the package of this checkout (built in place), whatever else is installed.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_here))
sys.path.insert(0, _here)
