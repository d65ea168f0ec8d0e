"""`import pytorchlite` leaves torch.fx out until it is used: `pytorchlite.fx`,
`import pytorchlite.fx` and `from pytorchlite import fx` import it then."""
import subprocess
import sys

import pytest

import pytorchlite as ptl
from helpers import ROOT


def run(code):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("use", [
    "pytorchlite.fx.symbolic_trace",
    "__import__('pytorchlite.fx').fx.Graph",
    "__import__('pytorchlite.fx.passes.shape_prop').fx.passes.shape_prop.ShapeProp",
])
def test_fx_is_imported_on_first_use(use):
    out = run("import sys, pytorchlite\n"
              "print(any(m.startswith('pytorchlite.fx') for m in sys.modules))\n"
              f"print({use}.__name__)\n"
              "print('pytorchlite.fx' in sys.modules)")
    assert out.split("\n")[0::2] == ["False", "True"]


def test_other_attributes_are_still_missing():
    with pytest.raises(AttributeError, match="module 'pytorchlite' has no attribute 'no_such'"):
        ptl.no_such  # noqa: B018
    from pytorchlite import fx
    assert ptl.fx is fx
