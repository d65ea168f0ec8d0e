from .activation import ReLU, Sigmoid, Tanh  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .module import Module  # noqa: F401
