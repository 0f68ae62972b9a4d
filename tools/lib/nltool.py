"""What normlab's Python tools share: one-line errors, the engine's own checks, and safe --out paths.

    import nltool
    def main(argv):
        a = nltool.ArgumentParser(prog="export_onnx.py").parse_args(argv)
        nltool.check_model(a.model)                 # the engine's loader says yes, or ToolError
        ...
    if __name__ == "__main__":
        nltool.run("export_onnx.py", main, sys.argv[1:])

- Every error is one line on stderr: ToolError and OSError with exit 1, a usage error with exit 2.
  No traceback reaches the user.
- The rules a model must meet (dimensions, ranges, finite weights, the vocabulary) are stated once,
  in the engine's loader. A tool does not restate them: it asks the engine (`normlab info --json`)
  about the model it reads, and about the model it writes before that replaces anything.
- An --out path is refused when it is empty, or names or lies inside an input.
"""
import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECK_TIMEOUT_S = 300


class ToolError(Exception):
    """An input or output a tool refuses, with the reason (printed as one line)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line: "prog: error: ... (see --help)", exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def run(prog, main, argv):
    """Runs main(argv); a ToolError or OSError becomes one line on stderr and exit 1."""
    try:
        main(argv)
    except ToolError as e:
        sys.exit(f"{prog}: {e}")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        sys.exit(f"{prog}: {where}{e.strerror or e}")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - a case no check foresaw: still one line, never a traceback
        sys.exit(f"{prog}: internal error: {type(e).__name__}: {str(e)[:200]}")


def engine_binary():
    """The normlab binary that checks models: $NORMLAB_BIN, else the checkout's ./normlab, else PATH's."""
    env = os.environ.get("NORMLAB_BIN")
    if env is not None:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise ToolError(f"NORMLAB_BIN={env!r}: not an executable file")
        return env
    built = os.path.join(ROOT, "normlab")
    if os.path.isfile(built) and os.access(built, os.X_OK):
        return built
    found = shutil.which("normlab")
    if not found:
        raise ToolError("the normlab binary checks every model a tool reads or writes, and none was found: "
                        "build it with make, or set NORMLAB_BIN")
    return found


def new_file_mode(directory=False):
    """The mode open() (or mkdir) would give a new file (directory): 0o666 (0o777) less the umask.
    tempfile's files are 0o600, so a tool that writes through one gives its output this mode."""
    mask = os.umask(0o022)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def model_arg(arg):
    """A model argument as normlab -m takes it: a path, or a shipped model's name (weights/NAME)."""
    shipped = os.path.join(ROOT, "weights", arg)
    if not os.path.exists(arg) and os.sep not in arg and os.path.isdir(shipped):
        return shipped
    return arg


def check_model(path, shown_as=None, files=None):
    """The engine's verdict on the model at path: its `normlab info --json --check-weights` (a dict: every
    weight read, as a run reads them), or ToolError
    with the loader's one-line reason (naming shown_as where it names path: a model not yet in place;
    files: name in the model -> the path to name instead, for an importer whose model's files come
    from an input's)."""
    try:
        r = subprocess.run([engine_binary(), "info", "-m", os.path.abspath(path), "--json", "--check-weights"],
                           capture_output=True, timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{path}: normlab took more than {CHECK_TIMEOUT_S} s to check it")
    if r.returncode != 0:
        lines = r.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit status {r.returncode}"]
        reason = lines[-1].removeprefix("normlab: ")
        for name, shown in (files or {}).items():
            reason = reason.replace(os.path.join(os.path.abspath(path), name), shown)
        if shown_as:
            reason = reason.replace(os.path.abspath(path), shown_as)
        raise ToolError(f"normlab cannot load it: {reason}")
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise ToolError(f"{path}: normlab info --json printed no JSON")


def _within(path, top):
    """Whether path is top or lies inside it (both resolved)."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def check_out(out, inputs, want_dir, make_parents=False):
    """Refuses an --out that is empty, is or lies inside one of inputs (files or model directories),
    or is of the wrong kind: want_dir, a model directory (new, empty, or one holding config.json);
    else a file (new or regular). A missing parent is refused, unless make_parents (the writer makes
    it, as save_pretrained does): then the nearest folder that exists must be writable. Returns out's
    resolved path."""
    if not out:
        raise ToolError("--out is empty: name the output")
    real = os.path.realpath(out)
    for given in inputs:
        if given and _within(real, os.path.realpath(given)):
            raise ToolError(f"--out {out}: it is the input {given}, or lies inside it; write somewhere else")
    parent = os.path.dirname(real)
    while make_parents and not os.path.lexists(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ToolError(f"--out {out}: no directory {parent}" if not os.path.lexists(parent) else
                        f"--out {out}: {parent} is not a directory")
    if want_dir and os.path.lexists(real):
        if not os.path.isdir(real):
            raise ToolError(f"--out {out}: exists and is not a directory")
        if os.listdir(real) and not os.path.isfile(os.path.join(real, "config.json")):
            raise ToolError(f"--out {out}: a directory that holds no model (no config.json); "
                            "refusing to replace it")
    if not want_dir and os.path.isdir(real):
        raise ToolError(f"--out {out}: is a directory; name the file to write")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ToolError(f"--out {out}: cannot write in {parent}")
    return real


@contextlib.contextmanager
def writing(out):
    """Turns a failure to write --out (a full disk, a read-only directory) into a ToolError naming it."""
    try:
        yield
    except OSError as e:
        raise ToolError(f"--out {out}: cannot write: {e.strerror or e}")


class Tee:
    """A stream that writes through to stream and keeps what it wrote (bench.py --log)."""

    def __init__(self, stream):
        self.stream, self.text = stream, io.StringIO()

    def write(self, s):
        self.text.write(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()
