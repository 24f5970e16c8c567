"""What every `tools/lab` command shares: the tree's labs, installing Debian packages, configuring
and building with CMake, and running one test per process (ctest, or a test binary directly).
Python 3 standard library only."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What building and testing the labs needs, as Debian/Ubuntu package names.
BUILD_PACKAGES = [
    "cmake", "ninja-build", "g++", "libgtest-dev", "libeigen3-dev",
    "libboost-context-dev", "libbenchmark-dev",
]


# ---- installing what is missing -------------------------------------------------------------

def missing_packages(packages: list[str]) -> list[str]:
    """The packages of `packages` that dpkg does not report as installed."""
    if shutil.which("dpkg-query") is None:
        return []  # not a Debian-family system: let CMake say what it cannot find
    missing = []
    for pkg in packages:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                             capture_output=True, text=True)
        if out.returncode != 0 or "install ok installed" not in out.stdout:
            missing.append(pkg)
    return missing


def ensure_packages(packages: list[str]) -> None:
    """Installs the missing ones of `packages` with apt-get when root or with password-less sudo;
    otherwise prints the exact command to run and exits with status 1."""
    missing = missing_packages(packages)
    if not missing:
        return
    install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                                 capture_output=True).returncode == 0:
        prefix = ["sudo", "-n"]
    else:
        print("tools/lab: these Debian packages are missing: " + " ".join(missing))
        print("Install them with:\n  sudo apt-get update && sudo " + " ".join(install))
        sys.exit(1)
    print("tools/lab: installing " + " ".join(missing), flush=True)
    subprocess.run(prefix + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(prefix + install, check=True, env=env)


# ---- the labs of a tree -----------------------------------------------------------------------

@dataclass(frozen=True)
class Lab:
    number: str   # "02"
    room: str     # "02-online-softmax"
    title: str    # "Paged attention with online softmax"

    @property
    def target(self) -> str:
        return f"lab{self.number}"


def labs(root: Path = ROOT) -> list[Lab]:
    """Every lab room of the tree at `root`, in the book's order."""
    found = []
    for room in sorted((root / "labs").glob("[0-9][0-9]-*")):
        title = room.name[3:]
        readme = room / "README.md"
        if readme.exists():
            first = readme.read_text(encoding="utf-8").splitlines()[0]
            m = re.match(r"#\s*Lab\s+\d+\s*[—-]\s*(.*?)\s*(\{#[^}]*\})?\s*$", first)
            if m:
                title = m.group(1)
        found.append(Lab(room.name[:2], room.name, title))
    return found


def pick_labs(wanted: list[str], root: Path = ROOT) -> list[Lab]:
    """The labs named by number in `wanted` (every lab when empty); exits on an unknown one."""
    every = labs(root)
    if not wanted:
        return every
    by_number = {lab.number: lab for lab in every}
    picked = []
    for n in wanted:
        n = n.zfill(2)
        if n not in by_number:
            sys.exit(f"tools/lab: there is no lab {n} (labs: {', '.join(by_number)})")
        picked.append(by_number[n])
    return picked


def has_solutions(root: Path = ROOT) -> bool:
    return (root / "solutions").is_dir()


def require_solutions(command: str, root: Path = ROOT) -> None:
    if not has_solutions(root):
        sys.exit(f"tools/lab {command} is an instructor command and needs solutions/, which this "
                 "tree (a student release) does not have. Students: tools/lab grade")


# ---- configuring and building -----------------------------------------------------------------

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


# ---- running tests ---------------------------------------------------------------------------

STATUS_LINE = re.compile(r"Test\s+#\d+:\s+(.*?)\s+[\d.]+\s+sec\s*$", re.M)

# ctest's words for a test killed by a signal, and the signal.
SIGNALS = {"SegFault": "SIGSEGV", "Subprocess aborted": "SIGABRT", "Numerical": "SIGFPE",
           "Illegal": "SIGILL", "Bus error": "SIGBUS", "Interrupt": "SIGINT",
           "Child aborted": "SIGABRT"}


def test_key(ctest_name: str) -> str:
    """`Suite.Test` of a ctest name: without the `labNN.` prefix, the value-parameterised
    instance (`Prefix/`, `/Emulator`, `/0`) and the `  # GetParam() = ...` tail."""
    name = ctest_name.split("  # ")[0]
    name = re.sub(r"^lab\d\d\.", "", name)
    name = re.sub(r"^simt\.", "", name)
    suite, _, test = name.partition(".")
    return f"{suite.split('/')[-1]}.{test.split('/')[0]}"


def is_checks(key: str) -> bool:
    return key.split(".")[0].endswith("Checks")


def parse_status_lines(stdout: str, names: list[str]) -> dict[str, str]:
    """Maps each test name to the status word ctest printed for it ("Passed", "***Failed",
    "***Exception: SegFault", "***Timeout", "***Skipped" ...). Names may hold spaces (value-
    parameterised tests end in "  # GetParam() = ..."), so each line is matched against the
    known names, longest first, rather than split on whitespace."""
    by_length = sorted(names, key=len, reverse=True)
    found = {}
    for m in STATUS_LINE.finditer(stdout):
        rest = m.group(1)
        for name in by_length:
            if rest.startswith(name):
                found[name] = rest[len(name):].strip(" .")
                break
    return found


@dataclass
class TestResult:
    name: str          # the ctest name, e.g. "lab02.PagedOnlineAttention.BlockSizeOne"
    status: str        # passed / failed / not implemented / crashed / timed out / skipped / did not build
    output: str = ""
    seconds: float = 0.0
    detail: str = ""   # the signal of a crash, the first mismatch of a failure, the compiler error

    @property
    def key(self) -> str:
        return test_key(self.name)


def classify(word: str, output: str) -> tuple[str, str]:
    """(status, detail) of a test from ctest's status word and the test's output."""
    if word == "Passed":
        return "passed", ""
    if "Timeout" in word:
        return "timed out", ""
    if "Skipped" in word or "Not Run" in word or "Disabled" in word:
        m = re.search(r"Skipped\s*\n?(.*)", output)
        return "skipped", (m.group(1).strip() if m else "") or "skipped"
    m = re.search(r"not implemented yet: ([^\n\"]*?) —", output)
    if m:
        return "not implemented", m.group(1)
    if "Exception" in word:
        sig = next((s for w, s in SIGNALS.items() if w in word), word.split(":")[-1].strip())
        return "crashed", sig
    if "[  FAILED  ]" not in output:
        return "crashed", "exited early: " + (word.lstrip("*") or "no GoogleTest verdict")
    return "failed", first_mismatch(output)


def first_mismatch(output: str) -> str:
    """The assertion's own words of the first failure in a GoogleTest output."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Failure"):
            block = []
            for follow in lines[i + 1:]:
                if not follow.strip() or follow.startswith("["):
                    break
                block.append(follow.strip())
            for text in block:  # "Actual: false (first difference at [0]: 6 vs 0)"
                m = re.match(r"Actual: false \((.*)\)$", text)
                if m:
                    return m.group(1)[:160]
            return " ".join(block)[:160]
    return ""


def ctest(build: Path, labels: str | None, junit: Path, timeout: int | None = None,
          ) -> dict[str, TestResult]:
    """Runs ctest in `build` (only the tests whose label matches `labels`, when given) and returns
    each test's result, by ctest name."""
    listing = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    names = [t["name"] for t in json.loads(listing.stdout)["tests"]]
    cmd = ["ctest", "--test-dir", str(build), "--output-junit", str(junit),
           "-j", str(os.cpu_count() or 2)]
    if labels:
        cmd += ["-L", labels]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    if junit.exists():
        junit.unlink()
    done = subprocess.run(cmd, capture_output=True, text=True)
    words = parse_status_lines(done.stdout, names)
    outputs, seconds = {}, {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            out = case.find("system-out")
            outputs[case.get("name")] = out.text if out is not None and out.text else ""
            seconds[case.get("name")] = float(case.get("time") or 0)
    results = {}
    for name, word in words.items():
        output = outputs.get(name, "")
        status, detail = classify(word, output)
        results[name] = TestResult(name, status, output, seconds.get(name, 0.0), detail)
    return results


def run_gtest_one(exe: Path, gtest_name: str, timeout: float) -> TestResult:
    """Runs one GoogleTest test of `exe` in its own process (as ctest would) and classifies it."""
    try:
        done = subprocess.run([str(exe), f"--gtest_filter={gtest_name}", "--gtest_brief=0"],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return TestResult(gtest_name, "timed out")
    output = done.stdout + done.stderr
    if done.returncode == 0 and "[  PASSED  ] 1 test" in output:
        return TestResult(gtest_name, "passed", output)
    if done.returncode == 0 and "[  SKIPPED ]" in output:
        return TestResult(gtest_name, "skipped", output)
    if done.returncode < 0:
        import signal
        return TestResult(gtest_name, "crashed", output,
                          detail=signal.Signals(-done.returncode).name)
    status, detail = classify("***Failed", output)
    return TestResult(gtest_name, status, output, detail=detail)


def list_gtests(exe: Path) -> list[str]:
    """The full GoogleTest names (`Suite.Test`, `Suite.Test/Param`) that `exe` holds."""
    out = subprocess.run([str(exe), "--gtest_list_tests"], capture_output=True, text=True,
                         check=True).stdout
    names, suite = [], ""
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names
