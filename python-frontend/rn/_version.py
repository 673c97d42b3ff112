"""RN's version: the one place it is set.

The wheel's metadata (pyproject.toml reads it with a regex), ``rn.__version__``
and every tool's ``--version`` (CMake reads it into ``rn_version.h``) come
from this line.
"""

__version__ = "0.2.0"
