import os
import sys

# Run the tests against the package in this checkout, not a stale install elsewhere.
sys.path.insert(0, os.path.dirname(__file__))
