#!/usr/bin/env bash
# Run a command with openbox managing the windows of the current DISPLAY (xvfb-run's), so the
# GUI tests see what a user's desktop does: title bars and frames, a work area, maximizing.
#   xvfb-run -a -s "-screen 0 1920x1200x24" scripts/with-window-manager.sh python -m pytest
# Waits until openbox manages windows (wmctrl -m answers), runs the command, stops openbox,
# and exits with the command's status.
set -uo pipefail

WAIT_S=${WM_WAIT_S:-20}
[ -n "${DISPLAY:-}" ] || { echo "with-window-manager: DISPLAY is not set (run it inside xvfb-run)" >&2; exit 2; }
for tool in openbox wmctrl; do
  command -v "$tool" >/dev/null || { echo "with-window-manager: $tool is missing (scripts/install-system-deps.sh --with-xvfb)" >&2; exit 2; }
done

openbox --sm-disable >/dev/null 2>&1 &
wm=$!
stop() { kill "$wm" 2>/dev/null; wait "$wm" 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

deadline=$((SECONDS + WAIT_S))
until wmctrl -m >/dev/null 2>&1; do
  if ! kill -0 "$wm" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
    echo "with-window-manager: openbox did not start managing windows on $DISPLAY within ${WAIT_S} s" >&2
    exit 2
  fi
  sleep 0.1
done

"$@"
