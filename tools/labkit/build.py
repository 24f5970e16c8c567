"""Configuring and building the tree with CMake, as every tools/lab command does: one tools/lab at
a time per build folder (a lock), and a lab's binaries never older than its sources (stamps)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from labkit import stamps, system
from labkit.labs import Lab
from labkit.paths import ROOT, shown

# How often a lab is built again when its sources keep changing while it builds (an editor that
# saves every few seconds); after that the grader refuses rather than grade old code.
MAX_BUILDS = 5


def run(cmd: list[str], cwd: Path = ROOT, quiet: bool = False, **kw) -> subprocess.CompletedProcess:
    if not quiet:
        print("$ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=cwd, **kw)


def build_env() -> dict:
    return dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))


def gpu_present() -> bool:
    """Whether nvidia-smi lists a GPU on this machine."""
    if shutil.which("nvidia-smi") is None:
        return False
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return done.returncode == 0 and "GPU" in done.stdout


# ---- one tools/lab per build folder ----------------------------------------------------------

@contextlib.contextmanager
def lock(build: Path, what: str, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Holds build/<kind>.lock while configuring, building and testing in `build`, so that two
    tools/lab commands (a `watch` and a `grade` side by side) take turns instead of building the
    same folder at once. Waits, saying for whom, when another one holds it. A build/ this user
    cannot write (root made it) is diagnosed, with its fix, before the lock file is touched."""
    system.require_writable(build, build.parent.parent)  # build is <root>/build/<kind>
    build.parent.mkdir(parents=True, exist_ok=True)
    path = build.parent / f"{build.name}.lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another tools/lab"
            (say or print)(f"waiting for {holder} to finish with {shown(build)} ...")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"tools/lab {what} (pid {os.getpid()})\n")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)


# ---- configuring -----------------------------------------------------------------------------

def cached(build: Path) -> dict[str, str]:
    """The cache variables of a configured build folder (empty when it is not configured)."""
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return {}
    out = {}
    for line in cache.read_text(errors="replace").splitlines():
        m = re.match(r"^([A-Za-z_][\w.-]*):\w+=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def configure(build: Path, options: dict[str, str], root: Path = ROOT, quiet: bool = False) -> None:
    """Configures (or re-configures) `build` from the tree at `root` with the -D `options`;
    every lab is built (PA_LABS empty) unless `options` says otherwise. A folder whose cache
    already holds every option is left alone (the build re-runs CMake itself when a
    CMakeLists.txt changed)."""
    # PA_CUDA=OFF in the environment leaves nvcc out (a machine, or a CI step, without a GPU).
    system.require_writable(build, root)
    cuda = {"PA_CUDA": os.environ["PA_CUDA"]} if os.environ.get("PA_CUDA") else {}
    wanted = {"PA_LABS": "", **cuda, **options}
    have = cached(build)
    if have and (build / "build.ninja").exists() and all(
            have.get(k) == v for k, v in wanted.items()):
        return
    defs = [f"-D{k}={v}" for k, v in wanted.items()]
    if have:
        cmd = ["cmake", "-B", str(build), *defs]
    else:
        cmd = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
               "-DCMAKE_BUILD_TYPE=Release", *defs]
    done = run(cmd, cwd=root, quiet=quiet, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit("tools/lab: CMake could not configure the project (see above)")


# ---- building --------------------------------------------------------------------------------

def build_target(build: Path, target: str, quiet: bool = False,
                 tick: Callable[[float], None] | None = None) -> tuple[bool, str]:
    """Builds one target; returns (success, the build's output). `tick(seconds so far)` is called
    about once a second while it builds."""
    cmd = ["cmake", "--build", str(build), "--target", target]
    if not quiet:
        print("$ " + " ".join(cmd), flush=True)
    start = time.monotonic()
    with subprocess.Popen(cmd, cwd=ROOT, env=build_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        while True:
            try:
                output, _ = proc.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:   # (communicate again loses no output)
                if tick:
                    tick(time.monotonic() - start)
    return proc.returncode == 0, output


def outdate(build: Path, rel_paths: list[str], root: Path = ROOT) -> list[Path]:
    """Removes from `build` every output that ninja's dependency log says was compiled from, or
    included, one of the files `rel_paths` (relative to the tree), so that the next build compiles
    it again whatever the files' times; returns what it removed. An object the log does not know
    yet is one ninja rebuilds anyway (it counts missing dependencies as dirty)."""
    wanted = {(root / rel).resolve() for rel in rel_paths if Path(rel).suffix not in stamps.NOT_BUILT}
    if not wanted or not (build / "build.ninja").exists():
        return []
    ninja = cached(build).get("CMAKE_MAKE_PROGRAM") or "ninja"
    done = subprocess.run([ninja, "-C", str(build), "-t", "deps"], capture_output=True, text=True)
    removed, output = [], None
    for line in done.stdout.splitlines():
        if not line.startswith((" ", "\t")):       # "<output>: #deps N, deps mtime T (VALID)"
            output = build / line.split(": #deps")[0] if ": #deps" in line else None
        elif output is not None and (build / line.strip()).resolve() in wanted:
            output.unlink(missing_ok=True)
            removed.append(output)
            output = None                           # one listed input is enough
    return removed


def build_lab(build: Path, lab: Lab, target: str, root: Path = ROOT,
              say: Callable[[str], None] = lambda text: None,
              tick: Callable[[float], None] | None = None) -> tuple[bool, str, dict[str, str]]:
    """Builds `target` of `lab` so that it matches the lab's sources as they are when the build
    ends; returns (success, the build's output, the digest of the sources it was built from).

    The sources are hashed before and after each build. A file that changed meanwhile may have
    been compiled as it was before the save while its object is newer than it (ninja would never
    build it again): the objects built from it are removed (outdate) and the target built again,
    at most MAX_BUILDS times. A stamp that does not match the sources before building (an earlier
    build interrupted, or made by hand) gets the same treatment, and a build folder without a
    stamp has the objects of all the lab's sources removed once. The sources themselves are only
    read: an editor never sees them change on disk behind the student's back."""
    files = stamps.sources(lab, stamps.impl_of(build), root)
    now = stamps.digest(files, root)
    before_stamp = stamps.read(build, lab)
    stamps.forget(build, lab)   # until this build ends with the sources unchanged
    outdate(build, list(now) if before_stamp is None else stamps.changed(before_stamp, now), root)
    for attempt in range(1, MAX_BUILDS + 1):
        before = stamps.digest(files, root)
        ok, output = build_target(build, target, quiet=True, tick=tick)
        after = stamps.digest(files, root)
        moved = stamps.changed(before, after)
        if not moved:
            stamps.write(build, lab, after)
            return ok, output, after
        outdate(build, moved, root)
        say(f"lab {lab.number}: {', '.join(Path(m).name for m in moved)} changed during the "
            "build: building again")
    return False, (f"the sources of lab {lab.number} changed during each of {MAX_BUILDS} builds "
                   "in a row: not graded (save, wait for the build, then grade)"), {}


def first_compiler_error(output: str, root: Path = ROOT) -> str:
    """The first compiler error of a build's output, as "path:line: message"."""
    for line in output.splitlines():
        if re.search(r"\berror\b", line) and not line.startswith(("FAILED:", "ninja:")):
            return line.replace(str(root) + "/", "").strip()
    tail = [l for l in output.splitlines() if l.strip()]
    return tail[-1] if tail else "the build failed"
