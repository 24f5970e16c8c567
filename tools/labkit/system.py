"""The machine around the tree: the Debian packages tools/lab needs (tools/packages.txt), installing
them, and who may write where. Only `tools/lab setup` needs root; the other commands install what
is missing themselves only where that needs no password (as root in a root's tree, or with
password-less sudo), and otherwise print the one command that installs all of it. None of them
builds as root in a tree that belongs to someone else, and a build folder the user cannot write
is explained with its fix."""
from __future__ import annotations

import grp
import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from labkit.paths import PACKAGE_LIST, ROOT, build_root, shown

APT_INSTALL = ["apt-get", "install", "-y", "--no-install-recommends"]
SUDO_GROUPS = {"sudo", "admin", "wheel"}   # the groups sudo lets in on Debian, Ubuntu and others


# ---- the package list --------------------------------------------------------------------------

def package_groups(path: Path = PACKAGE_LIST) -> dict[str, list[str]]:
    """The groups of tools/packages.txt: name -> packages, in the file's order."""
    groups: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, colon, rest = line.partition(":")
        if not colon or not name.strip() or not rest.split():
            raise ValueError(f"{path}:{number}: expected '<group>: <package> ...'")
        groups[name.strip()] = rest.split()
    return groups


def packages(*groups: str) -> list[str]:
    """The packages of `groups`, each once, in order."""
    table = package_groups()
    found: list[str] = []
    for g in groups:
        if g not in table:
            raise KeyError(f"{PACKAGE_LIST}: no group {g!r} (groups: {', '.join(table)})")
        found += [p for p in table[g] if p not in found]
    return found


def missing_packages(wanted: list[str]) -> list[str]:
    """The packages of `wanted` that dpkg does not report as installed (none off Debian)."""
    if shutil.which("dpkg-query") is None:
        return []  # not a Debian-family system: let CMake say what it cannot find
    done = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\\n", *wanted],
                          capture_output=True, text=True)
    installed = {line.split()[0] for line in done.stdout.splitlines()
                 if line.endswith("install ok installed")}
    return [p for p in wanted if p not in installed]


# ---- who we are --------------------------------------------------------------------------------

def user_name(uid: int | None = None) -> str:
    uid = os.geteuid() if uid is None else uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def passwordless_sudo() -> bool:
    return shutil.which("sudo") is not None and subprocess.run(
        ["sudo", "-n", "true"], capture_output=True).returncode == 0


def may_sudo() -> bool:
    """Whether sudo is installed and this user is in a group it admits (it may still ask for the
    user's password). Without it, root is reached with su and root's password."""
    if shutil.which("sudo") is None:
        return False
    try:
        names = {grp.getgrgid(g).gr_name for g in os.getgroups()}
    except KeyError:
        names = set()
    return bool(names & SUDO_GROUPS)


def as_root(command: str) -> str:
    """`command` (a shell command line) as this user can run it as root: itself for root,
    through sudo where sudo admits the user, else through su (root's password)."""
    if os.geteuid() == 0:
        return command
    if may_sudo():
        return f"sudo sh -c {shlex.quote(command)}" if ("&&" in command or ";" in command) \
            else f"sudo {command}"
    return f"su -c {shlex.quote(command)}"


def install_command(missing: list[str]) -> str:
    """The one command line that installs `missing`, as this user can run it."""
    return as_root("apt-get update && " + " ".join(APT_INSTALL + missing))


# ---- installing --------------------------------------------------------------------------------

def install(missing: list[str], prefix: list[str]) -> None:
    print(f"tools/lab: installing {len(missing)} Debian packages: " + " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(prefix + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(prefix + APT_INSTALL + missing, check=True, env=env)


def ensure_packages(wanted: list[str], rerun: str = "") -> None:
    """Installs the missing ones of `wanted` when that needs no password (root, or password-less
    sudo); otherwise prints every missing package and the one command that installs them all,
    and exits with status 1. `rerun` is the command to run again afterwards (for the message)."""
    missing = missing_packages(wanted)
    if not missing:
        return
    if os.geteuid() == 0:
        return install(missing, [])
    if passwordless_sudo():
        return install(missing, ["sudo", "-n"])
    how = ("with sudo" if may_sudo() else
           "with su and root's password (this account has no sudo)")
    print(f"tools/lab: {len(missing)} Debian packages are missing: {' '.join(missing)}\n"
          f"Install them as root, {how}:\n\n"
          f"  {install_command(missing)}\n\n"
          f"(or: {as_root(shlex.quote(str(ROOT / 'tools' / 'lab')) + ' setup')}), then run "
          f"{rerun or 'the same command'} again as yourself.", file=sys.stderr)
    sys.exit(1)


# ---- who may write where -----------------------------------------------------------------------

def owner_of(path: Path) -> int:
    return path.stat().st_uid


def refuse_root_in_foreign_tree(command: str, root: Path = ROOT) -> None:
    """Exits when running as root in a tree that belongs to another user: what root builds there
    that user can no longer change or delete (the packages are installed by then). A container
    or CI job that runs as root in a checkout owned by another uid sets LAB_ROOT_BUILD=1."""
    if os.geteuid() != 0 or os.environ.get("LAB_ROOT_BUILD") == "1":
        return
    owner = owner_of(root)
    if owner == 0:
        return
    name = user_name(owner)
    sys.exit(f"tools/lab: you are root, but this tree belongs to {name}. tools/lab does not build "
             f"as root in another user's tree: the files it would make there ({shown(build_root(root), root)}/) "
             f"would belong to root, and {name} could not rebuild or delete them.\n"
             f"Every package tools/lab {command} needs is installed. Now run it as {name}, "
             f"without sudo:\n\n  tools/lab {command}\n\n"
             "(Only tools/lab setup, which installs the packages, is meant to run as root. A "
             "container or CI job that must build as root here: set LAB_ROOT_BUILD=1.)")


def unwritable(paths: list[Path]) -> list[Path]:
    """The folders among `paths` and everything inside them that this user cannot write."""
    if os.geteuid() == 0:
        return []
    bad = []
    for top in paths:
        if not top.exists():
            continue
        if not os.access(top, os.W_OK):
            bad.append(top)
            continue
        if top.is_dir():
            for folder, dirs, _ in os.walk(top):
                for d in dirs:
                    p = Path(folder) / d
                    if not os.access(p, os.W_OK | os.X_OK):
                        bad.append(p)
                dirs[:] = [d for d in dirs if Path(folder, d) not in bad]
    return bad


def require_writable(build: Path, root: Path = ROOT) -> None:
    """Exits with the fix when the build folder `build` (or build/ itself, or anything in it)
    cannot be written by this user: typically what a run as root (sudo tools/lab grade) left."""
    top = build_root(root)
    if os.geteuid() != 0 and not top.exists() and not os.access(root, os.W_OK):
        sys.exit(f"tools/lab: {user_name()} cannot write {root}, so it cannot make build/ there: "
                 f"it belongs to {user_name(owner_of(root))}. Run tools/lab as that user, or "
                 "clone the repository into a folder of your own.")
    where = [top] if top.exists() and not os.access(top, os.W_OK) else [build]
    bad = unwritable(where)
    if not bad:
        return
    first = bad[0]
    try:
        owner = user_name(owner_of(first))
    except OSError:
        owner = "another user"
    me = user_name()
    fix = as_root(f"chown -R {shlex.quote(me)}: {shlex.quote(str(where[0]))}")
    sys.exit(f"tools/lab: {me} cannot write {shown(first, root)}: it belongs to {owner}"
             + (" (a run as root, e.g. sudo tools/lab ..., made it)" if owner == "root" else "")
             + f".\nGive it back to {me}, keeping what was built:\n\n  {fix}\n\n"
             f"(or delete it: {as_root('rm -rf ' + shlex.quote(str(where[0])))}), then run the "
             "command again as yourself. Only tools/lab setup needs root.")
