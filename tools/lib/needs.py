"""The Debian packages a tool needs, asked for before the tool imports them: a missing one is one
line that names its package and the command that installs it, and exit 1, never a traceback.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
    import needs  # noqa: E402
    needs.packages("numpy", "torch")  # before numpy, torch, or a tools/lib module that imports them
    import numpy as np  # noqa: E402

The standard library only, so that it runs where nothing else is installed (tools/install-deps.sh
without --python: the C build and `make run`).
"""
import importlib
import os
import sys

INSTALL = "tools/install-deps.sh --python"
DEBIAN = {  # module -> the Debian package that provides it
    "numpy": "python3-numpy",
    "torch": "python3-torch",
    "matplotlib": "python3-matplotlib",
    "tqdm": "python3-tqdm",
    "onnx": "python3-onnx",
    "sentencepiece": "python3-sentencepiece",
}


def missing(*modules):
    """The Debian packages, of those that provide modules, that cannot be imported here."""
    absent = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            absent.append(DEBIAN[module])
    return absent


def packages(*modules, prog=None):
    """Returns when every module imports; else prints one line and exits 1."""
    absent = missing(*modules)
    if absent:
        prog = prog or os.path.basename(sys.argv[0])
        sys.exit(f"{prog}: needs {', '.join(absent)}, which is not installed: run {INSTALL}")
