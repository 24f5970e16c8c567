#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (the bundle is unpacked
# in /autograder/source): it installs the Debian/Ubuntu packages that grading needs, the missing
# ones only, through the workbook's own `tools/lab setup` (the list is tools/packages.txt).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/workbook/tools/lab" setup
