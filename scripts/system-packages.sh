#!/usr/bin/env bash
# Installs the Debian packages the project needs when they are missing, and does nothing otherwise.
# Xvfb runs the tests' private X servers; mss needs the libxcb libraries; XTest drives input;
# Chromium (headless) checks the live web view.
set -euo pipefail

missing=()
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
# Headless Chromium loads the live view's page in tests/cluster/test_live.py.
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
for lib in libxcb.so.1:libxcb1 libxcb-shm.so.0:libxcb-shm0 libxcb-randr.so.0:libxcb-randr0 \
           libxcb-render.so.0:libxcb-render0 libxcb-xfixes.so.0:libxcb-xfixes0 libXtst.so.6:libxtst6 \
           libXfixes.so.3:libxfixes3; do
  file=${lib%%:*}; package=${lib##*:}
  ldconfig -p 2>/dev/null | grep -q "$file" || missing+=("$package")
done
# Fonts for the simulator's interface text come with pygame; nothing else is needed.

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
