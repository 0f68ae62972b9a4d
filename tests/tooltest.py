"""What the Python tests of the tools share: counted checks, snapshots of paths, read-only folders."""
import os
import subprocess


class Checks:
    """Counts checks; summary() is the runner's closing line ("NAME: N passed, M failed")."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def __call__(self, cond, what, why=""):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}: {why}")

    def summary(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def snapshot(path):
    """path's contents: a file's bytes, a directory's names and contents, or None when it is absent."""
    if os.path.isfile(path):
        return open(path, "rb").read()
    if not os.path.isdir(path):
        return None
    return {n: snapshot(os.path.join(path, n)) for n in sorted(os.listdir(path))}


def make_read_only(path):
    """Makes the directory path unwritable even for root (an immutable flag, else a read-only mount);
    False where neither works. undo_read_only(path) reverses it."""
    if os.geteuid() != 0:
        os.chmod(path, 0o555)
        return True
    for cmd in (["chattr", "+i", path], ["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", path]):
        try:
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                return True
        except OSError:
            pass
    return False


def undo_read_only(path):
    if os.geteuid() != 0:
        os.chmod(path, 0o755)
        return
    subprocess.run(["chattr", "-i", path], capture_output=True)
    subprocess.run(["umount", path], capture_output=True)
