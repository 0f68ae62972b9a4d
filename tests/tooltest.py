"""What the Python tests of the tools share: counted checks, snapshots of paths, read-only folders."""
import os
import subprocess
import sys


ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
import needs  # noqa: E402


class Checks:
    """Counts checks; summary() is the runner's closing line ("NAME: N passed, M failed", then
    ", K skipped (PACKAGES missing: tools/install-deps.sh --python)" when some could not run)."""

    def __init__(self, name):
        self.name, self.passed, self.failed, self.skipped, self.absent = name, 0, 0, 0, []

    def skip(self, count, packages, what):
        """Counts count checks as skipped for want of the Debian packages named (a list)."""
        self.skipped += count
        self.absent += [p for p in packages if p not in self.absent]
        print(f"skip {what}: {', '.join(packages)} missing")

    def unless_missing(self, *modules, what, count=1):
        """True when every module imports; else counts count checks as skipped and returns False."""
        absent = needs.missing(*modules)
        if absent:
            self.skip(count, absent, what)
        return not absent

    def __call__(self, cond, what, why=""):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}: {why}")

    def summary(self):
        absent = ", ".join(self.absent)
        skipped = f", {self.skipped} skipped ({absent} missing: {needs.INSTALL})" if self.skipped else ""
        print(f"{self.name}: {self.passed} passed, {self.failed} failed{skipped}")
        return 1 if self.failed else 0


def skip_unless(name, *modules):
    """Ends a suite that needs modules where one cannot be imported: its closing line counts it as
    one skipped check and names the packages. Call it before the suite imports them."""
    absent = needs.missing(*modules)
    if absent:
        check = Checks(name)
        check.skip(1, absent, f"{name}, every check")
        sys.exit(check.summary())


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
