"""Configuring and building the tree with CMake, as every tools/lab command does."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from labkit import system
from labkit.paths import ROOT


def run(cmd: list[str], cwd: Path = ROOT, quiet: bool = False, **kw) -> subprocess.CompletedProcess:
    if not quiet:
        print("$ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=cwd, **kw)


def build_env() -> dict:
    return dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))


def configure(build: Path, options: dict[str, str], root: Path = ROOT, quiet: bool = False) -> None:
    """Configures (or re-configures) `build` from the tree at `root` with the -D `options`;
    every lab is built (PA_LABS empty) unless `options` says otherwise."""
    # PA_CUDA=OFF in the environment leaves nvcc out (a machine, or a CI step, without a GPU).
    system.require_writable(build, root)
    cuda = {"PA_CUDA": os.environ["PA_CUDA"]} if os.environ.get("PA_CUDA") else {}
    defs = [f"-D{k}={v}" for k, v in {"PA_LABS": "", **cuda, **options}.items()]
    if (build / "CMakeCache.txt").exists():
        cmd = ["cmake", "-B", str(build), *defs]
    else:
        cmd = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
               "-DCMAKE_BUILD_TYPE=Release", *defs]
    done = run(cmd, cwd=root, quiet=quiet, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit("tools/lab: CMake could not configure the project (see above)")


def build_target(build: Path, target: str, quiet: bool = False) -> tuple[bool, str]:
    """Builds one target; returns (success, the build's output)."""
    done = run(["cmake", "--build", str(build), "--target", target], quiet=quiet,
               env=build_env(), capture_output=True, text=True)
    return done.returncode == 0, done.stdout + done.stderr


def first_compiler_error(output: str, root: Path = ROOT) -> str:
    """The first compiler error of a build's output, as "path:line: message"."""
    for line in output.splitlines():
        if re.search(r"\berror\b", line) and not line.startswith(("FAILED:", "ninja:")):
            return line.replace(str(root) + "/", "").strip()[:300]
    tail = [l for l in output.splitlines() if l.strip()]
    return tail[-1][:300] if tail else "the build failed"
