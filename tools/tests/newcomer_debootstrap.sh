#!/usr/bin/env bash
# A newcomer's first ten minutes, for real: a fresh Debian 12 minbase root (debootstrap) with only
# git installed, the repository cloned into it, and the README's commands run as a new user would,
# each one timed:
#   user  an ordinary user without sudo (a fresh Debian has none):
#         1. tools/lab grade         -> stops, naming every missing package in one install command
#         2. that command, as root   -> installs them (then tools/lab setup, as root: nothing to do)
#         3. tools/lab grade         -> builds every lab from its starter, exit 1 (not full marks)
#         4. tools/lab test          -> builds the solutions, every test passes, exit 0
#         5. tools/lab grade         -> again (warm)
#         6. root runs tools/lab grade in the user's tree -> refused, with what to run instead
#         7. build/ handed to root (as an old `sudo tools/lab grade` left it); tools/lab grade as
#            the user -> diagnosed with the fix; the fix, as root; tools/lab grade works again
#   root  root in a tree of root's: tools/lab grade installs what is missing itself and grades;
#         tools/lab test passes (as before this change)
# Outside CI: it downloads Debian (about 25 MB for minbase, 100 MB of packages per scenario) and
# builds every lab twice per scenario. On a 2-core machine it took 6 minutes on quiet cores, 9 and
# 20 on cores shared with other builds (each command's wall time: WORKDIR/summary.txt).
#
# Usage (as root, on Debian or Ubuntu, with network access to the mirror):
#   tools/tests/newcomer_debootstrap.sh [WORKDIR] [user|root|both]
# MIRROR (default http://deb.debian.org/debian) picks the Debian mirror. The commit tested is the
# repository's HEAD (commit first). The log of every step is WORKDIR/<scenario>/log-*.txt.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-/tmp/pa-newcomer}"
which_ones="${2:-both}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "run it as root (debootstrap and chroot need root)"; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
mkdir -p "$work"
summary="$work/summary.txt"
: > "$summary"
failures=0

note() { echo "$*" | tee -a "$summary"; }
fail() { note "FAIL: $*"; failures=$((failures + 1)); }

# The base: minbase with git, made once and copied for each scenario.
base="$work/base"
if [ ! -x "$base/usr/bin/git" ]; then
  rm -rf "$base"
  start=$SECONDS
  debootstrap --variant=minbase --include=git bookworm "$base" "$mirror" > "$work/debootstrap.log" 2>&1
  note "debootstrap (minbase + git): $((SECONDS - start)) s"
fi
rm -rf "$work/pa.git"
git clone -q --bare "$repo" "$work/pa.git"

unmount_under() {  # every mount point below $1, deepest first
  awk -v top="$1/" 'index($2, top) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
}
trap 'unmount_under "$work"' EXIT

# fresh_root NAME: sets r to a copy of the base with /proc, /dev and a bare clone of the
# repository (/srv/pa.git) in it.
fresh_root() {
  r="$work/$1/root"
  unmount_under "$work/$1"
  rm -rf --one-file-system "$work/$1" && mkdir -p "$work/$1"
  cp -a "$base" "$r"
  cp -a "$work/pa.git" "$r/srv/pa.git"
  mount -t proc proc "$r/proc"
  mount --rbind /dev "$r/dev" && mount --make-rslave "$r/dev"
  cp /etc/resolv.conf "$r/etc/resolv.conf"
}

# step SCENARIO NAME EXPECTED_STATUS WHO COMMAND: runs COMMAND in the scenario's root as WHO
# (root, or a user through su -), logs it, times it, checks its exit status.
step() {
  local scenario="$1" name="$2" expected="$3" who="$4" cmd="$5" r="$work/$1/root" status
  local log="$work/$scenario/log-$name.txt" start=$SECONDS
  if [ "$who" = root ]; then
    chroot "$r" /bin/bash -lc "$cmd" > "$log" 2>&1 && status=0 || status=$?
  else
    chroot "$r" su - "$who" -c "$cmd" > "$log" 2>&1 && status=0 || status=$?
  fi
  note "$(printf '%-6s %-34s %-8s %4d s  exit %d' "$scenario" "$name" "($who)" $((SECONDS - start)) "$status")"
  [ "$status" -eq "$expected" ] || fail "$scenario/$name: exit $status, expected $expected (see $log)"
}

expect() {  # expect SCENARIO NAME TEXT: the step's log holds TEXT
  grep -qF -- "$3" "$work/$1/log-$2.txt" || fail "$1/$2: the output does not say: $3"
}

packages=$(sed -n 's/^lab:[[:space:]]*//p' "$repo/tools/packages.txt")

if [ "$which_ones" = user ] || [ "$which_ones" = both ]; then
  fresh_root user
  chroot "$r" useradd -m -s /bin/bash student
  chroot "$r" chown -R student: /srv/pa.git   # git refuses a repository of another owner
  step user clone 0 student "git clone -q /srv/pa.git pa"
  [ ! -e "$r/usr/bin/sudo" ] || fail "user: the base has sudo"

  step user 1-grade-no-packages 1 student "cd pa && tools/lab grade"
  expect user 1-grade-no-packages "Debian packages are missing: $packages"
  expect user 1-grade-no-packages "su -c 'apt-get update && apt-get install -y --no-install-recommends $packages'"
  install_line=$(grep -m1 "^  su -c 'apt-get" "$work/user/log-1-grade-no-packages.txt" | sed 's/^  //' || true)
  [ -n "$install_line" ] || { fail "user: no install command printed"; exit 1; }

  # The user pastes the printed line; su asks for root's password. Here root runs the same line
  # (su -c as root asks nothing).
  step user 2-printed-command-as-root 0 root "$install_line"

  step user 2b-setup-as-root 0 root "cd /home/student/pa && tools/lab setup"
  expect user 2b-setup-as-root "all 8 Debian packages are installed"

  step user 3-grade 1 student "cd pa && tools/lab grade"
  expect user 3-grade "lab 01 building"
  expect user 3-grade "points  result"
  expect user 3-grade "Exit status 1: not every graded test passes yet"
  step user 4-test 0 student "cd pa && tools/lab test"
  expect user 4-test "100% tests passed"
  step user 5-grade-again 1 student "cd pa && tools/lab grade"

  step user 6-grade-as-root-refused 1 root "cd /home/student/pa && tools/lab grade"
  expect user 6-grade-as-root-refused "this tree belongs to student"
  [ "$(chroot "$r" stat -c %U /home/student/pa/build)" = student ] || fail "user: root changed build/'s owner"

  chroot "$r" chown -R root:root /home/student/pa/build   # what an old sudo tools/lab grade left
  step user 7-grade-root-owned-build 1 student "cd pa && tools/lab grade"
  expect user 7-grade-root-owned-build "student cannot write build: it belongs to root"
  fix_line=$(grep -m1 "^  su -c 'chown" "$work/user/log-7-grade-root-owned-build.txt" | sed 's/^  //' || true)
  [ -n "$fix_line" ] || { fail "user: no fix printed for the root-owned build/"; exit 1; }
  step user 8-printed-fix-as-root 0 root "$fix_line"
  step user 9-grade-after-fix 1 student "cd pa && tools/lab grade"
  expect user 9-grade-after-fix "Exit status 1"
  left=$(chroot "$r" find /home/student/pa -user root -print -quit)
  [ -z "$left" ] || fail "user: files of root's in the student's tree: $left"
  unmount_under "$work/user"
fi

if [ "$which_ones" = root ] || [ "$which_ones" = both ]; then
  fresh_root root
  step root clone 0 root "git clone -q /srv/pa.git /root/pa"
  step root 1-grade-installs-and-grades 1 root "cd /root/pa && tools/lab grade"
  expect root 1-grade-installs-and-grades "installing"
  expect root 1-grade-installs-and-grades "Exit status 1"
  step root 2-test 0 root "cd /root/pa && tools/lab test"
  expect root 2-test "100% tests passed"
  step root 3-grade-again 1 root "cd /root/pa && tools/lab grade"
  unmount_under "$work/root"
fi

echo
cat "$summary"
if [ "$failures" -gt 0 ]; then
  echo "newcomer scenario: $failures failures"
  exit 1
fi
echo "newcomer scenario: passed"
