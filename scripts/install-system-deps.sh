#!/usr/bin/env bash
# Install the Debian packages Qt's xcb platform needs, plus (--with-xvfb) Xvfb, a window manager
# and the tools the tests use,
# but only those that are missing: on a prepared machine this does nothing.
set -euo pipefail

packages=(
  libegl1 libgl1 libglib2.0-0 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0
  libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0
  libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxcb-xfixes0 libx11-xcb1 fonts-dejavu-core
)
# Debian's Python needs python3-venv before 'python3 -m venv' works.
if ! "${PYTHON:-python3}" -c "import ensurepip" >/dev/null 2>&1; then
  packages+=(python3-venv)
fi
if [ "${1:-}" = "--with-xvfb" ]; then
  # the tests' X server, the window manager they run under (scripts/with-window-manager.sh),
  # the X tools that find, measure, maximize and type into windows, and the renderers that
  # exported SVGs are checked in (librsvg, headless Chromium)
  packages+=(xvfb xauth openbox x11-utils wmctrl xdotool librsvg2-bin chromium-headless-shell)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-system-deps: not a Debian-like system; install Qt's xcb libraries and Xvfb yourself." >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-system-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
