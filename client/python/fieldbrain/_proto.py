"""Finds and imports the Python modules generated from proto/brain/v1.

protoc writes them as the package `brain.v1` (their proto package path), and they import each
other by that name (recording_pb2 imports `brain.v1.brain_pb2`), so their directory goes on
sys.path as it is rather than being renamed into fieldbrain. Where fieldbrain looks, in order:

  1. $FIELDBRAIN_STUBS, when set: a directory holding brain/v1/brain_pb2.py;
  2. fieldbrain/_generated, the default output of client/python/generate_stubs.sh;
  3. wherever `brain.v1.brain_pb2` already imports from (PYTHONPATH, site-packages).

The chosen directory is put first on sys.path. Nothing else called `brain` should be importable
from before it; the modules are the same on every machine that generated them from this proto.
"""
import importlib
import os
import sys

STUBS_ENV = "FIELDBRAIN_STUBS"
DEFAULT_STUBS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_generated")


def _has_stubs(directory):
    return os.path.isfile(os.path.join(directory, "brain", "v1", "brain_pb2.py"))


def _stubs_dir():
    configured = os.environ.get(STUBS_ENV)
    if configured:
        if not _has_stubs(configured):
            raise ImportError(
                f"{STUBS_ENV}={configured} holds no brain/v1/brain_pb2.py; generate the stubs "
                f"there with client/python/generate_stubs.sh {configured}")
        return os.path.abspath(configured)
    if _has_stubs(DEFAULT_STUBS_DIR):
        return DEFAULT_STUBS_DIR
    return None


def load_brain_pb2():
    """Returns the module brain.v1.brain_pb2, putting its directory on sys.path if needed."""
    directory = _stubs_dir()
    if directory is not None and directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        return importlib.import_module("brain.v1.brain_pb2")
    except ImportError as e:
        raise ImportError(
            "fieldbrain needs the Python modules generated from proto/brain/v1: run "
            "client/python/generate_stubs.sh (writes client/python/fieldbrain/_generated), or "
            f"generate them elsewhere and set {STUBS_ENV} to that directory ({e})") from e
