#!/usr/bin/env bash
# End-to-end test of the real desktop binary (bin/ruvllm-app, `make app`)
# under Xvfb: a real ruvllmd with the synthetic model (started by
# bin/appserver), a message typed with xdotool, the streamed answer checked
# through the app's trace file (--trace), and light and dark screenshots
# whose brightness is checked.
#
#   test/app-e2e.sh [OUT_DIR]     screenshots go to OUT_DIR (default: a temp dir)
#   SOCKET=/path/ruvllm.sock ...  use a daemon that is already running instead
#
# It then clicks the tray icon, closes the window (hidden, not ended),
# launches the app a second time (the window comes back) and clicks the
# tray's Quit item over D-Bus (the app's
# StatusNotifierItem on a private session bus) and checks that the window
# hides, shows again and the app exits.
#
# Needs: xvfb, xdotool, imagemagick, dbus (dbus-daemon, dbus-send), and the
# libwebkit2gtk-4.1 runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-}
work=$(mktemp -d)
[ -n "$out" ] || out=$work
mkdir -p "$out"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "app-e2e: FAIL: $*" >&2
	[ -z "${DISPLAY:-}" ] || import -window root "$out/failure.png" 2>/dev/null || true
	echo "--- app log" >&2; tail -n 40 "$work/app.log" >&2 || true
	echo "--- trace" >&2; cat "$work/trace.jsonl" >&2 || true
	exit 1
}
# wait_for SECONDS COMMAND...: retry COMMAND every 0.2s.
wait_for() {
	local n=$(( $1 * 5 )); shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.2; done
	return 1
}

for tool in Xvfb xdotool import convert dbus-daemon dbus-send; do
	command -v "$tool" >/dev/null || fail "$tool not installed (apt-get install xvfb xdotool imagemagick dbus)"
done
[ -x bin/ruvllm-app ] || fail "bin/ruvllm-app missing: make app"

sock=${SOCKET:-}
if [ -z "$sock" ]; then
	[ -x bin/appserver ] || fail "bin/appserver missing: make app-server"
	bin/appserver --addr 127.0.0.1:0 --dist frontend/dist --dir "$work/daemon" >"$work/appserver.out" 2>"$work/appserver.log" &
	pids+=($!)
	wait_for 120 grep -q "listening on" "$work/appserver.out" || { cat "$work/appserver.log" >&2; fail "daemon did not start"; }
	sock=$(sed -n 's/^appserver daemon socket //p' "$work/appserver.out")
fi

# A free display number.
disp=99
while [ -e "/tmp/.X11-unix/X$disp" ] || [ -e "/tmp/.X$disp-lock" ]; do disp=$((disp + 1)); done
Xvfb ":$disp" -screen 0 1280x840x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
export DISPLAY=":$disp"
wait_for 20 xdotool getdisplaygeometry >/dev/null 2>&1 || fail "Xvfb did not start"

# Software rendering: no GPU under Xvfb.
export LIBGL_ALWAYS_SOFTWARE=1 WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
export XDG_RUNTIME_DIR="$work/xdg" && mkdir -m 0700 -p "$XDG_RUNTIME_DIR"
export HOME="$work/home" && mkdir -p "$HOME"
# A private session bus, so the test can reach the app's tray item.
dbus-daemon --session --nofork --print-address=3 3>"$work/bus.addr" >"$work/dbus.log" 2>&1 &
pids+=($!)
wait_for 10 test -s "$work/bus.addr" || fail "dbus-daemon did not start"
DBUS_SESSION_BUS_ADDRESS=$(head -n 1 "$work/bus.addr")
export DBUS_SESSION_BUS_ADDRESS
bin/ruvllm-app --socket "$sock" --trace "$work/trace.jsonl" --log-level debug >"$work/app.log" 2>&1 &
app_pid=$!
pids+=($app_pid)

wait_for 60 xdotool search --onlyvisible --name '^ruvllm$' >/dev/null 2>&1 || fail "no app window"
win=$(xdotool search --onlyvisible --name '^ruvllm$' | head -1)
wait_for 60 grep -q '"state":"ready"' "$work/trace.jsonl" || fail "app never became ready"
sleep 1 # let the page render the ready state and focus the composer

msg=${E2E_MESSAGE:-"Hello from xdotool, tell me about the kernel"}
msg2=${E2E_MESSAGE2:-"And how do I write a test for it?"}
# No window manager under Xvfb: focus the window directly, then type with
# XTEST (real key events, which GTK accepts; synthetic ones it ignores).
xdotool windowfocus --sync "$win" || fail "cannot focus the window"
# Click into the message box (bottom of the 1180x780 window's chat column),
# so no keystroke goes anywhere else while focus settles.
xdotool mousemove --window "$win" 520 713 click 1
sleep 0.5
xdotool type --delay 15 "$msg"
xdotool key Return
# has_replies N: the trace holds at least N finished replies.
has_replies() { [ "$(grep -c '"event":"chat:done"' "$work/trace.jsonl")" -ge "$1" ]; }
wait_for 90 has_replies 1 || fail "no reply streamed"
# A second message in the same conversation: its prompt starts with the
# first exchange, which the daemon's prefix cache must serve.
sleep 0.5
xdotool mousemove --window "$win" 520 713 click 1
sleep 0.3
xdotool type --delay 15 "$msg2"
xdotool key Return
wait_for 90 has_replies 2 || fail "no second reply"

python3 - "$work/trace.jsonl" "$msg" "$msg2" <<'PY' || fail "trace does not match what was typed"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"chat:done"' in l]
for l, msg in zip(lines, sys.argv[2:]):
    assert l["prompt"] == msg, f"prompt {l['prompt']!r} != typed {msg!r}"
    assert l["completion_tokens"] > 0 and l["text"], "empty reply"
    assert l["completion_id"].startswith("chatcmpl-"), l["completion_id"]
    print(f"app-e2e: reply {l['completion_id']}: {l['completion_tokens']} tokens, prompt {l['prompt_tokens']}, cached {l['cached_tokens']}")
assert lines[0]["conversation_id"] == lines[1]["conversation_id"], "second message went to another conversation"
assert lines[1]["cached_tokens"] > 0, "second reply got no prompt tokens from the prefix cache"
PY

# brightness FILE: mean luminance 0..1 of the window area.
brightness() { convert "$1" -colorspace Gray -format '%[fx:mean]' info:; }
sleep 1
import -window "$win" "$out/app-light.png"
# The dark shot shows the stats tab (its place in the 1180-wide window).
xdotool mousemove --window "$win" 1120 26 click 1
xdotool key ctrl+shift+l
sleep 1
import -window "$win" "$out/app-dark.png"
light=$(brightness "$out/app-light.png")
dark=$(brightness "$out/app-dark.png")
echo "app-e2e: brightness light $light dark $dark"
python3 -c "import sys; l, d = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if l > 0.75 and d < 0.3 else 1)" "$light" "$dark" \
	|| fail "screenshots are not a light and a dark window (light $light, dark $dark)"
# The tray: Activate (a click on the icon) hides the window and shows it
# again; the menu's Quit (dbusmenu item 4) ends the app.
item=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
	org.freedesktop.DBus.ListNames | grep -o "org.kde.StatusNotifierItem-$app_pid-[0-9]*" | head -n 1)
[ -n "$item" ] || fail "no StatusNotifierItem of the app on the session bus"
visible() { xdotool search --onlyvisible --name '^ruvllm$' >/dev/null 2>&1; }
hidden() { ! visible; }
click_icon() { dbus-send --session --print-reply --dest="$item" /StatusNotifierItem org.kde.StatusNotifierItem.Activate int32:0 int32:0 >/dev/null; }
click_icon || fail "tray Activate failed"
wait_for 10 hidden || fail "tray click did not hide the window"
click_icon || fail "tray Activate failed"
wait_for 10 visible || fail "second tray click did not show the window"
# Closing the window (Ctrl+W, the same path as the close button) hides it;
# the app keeps running, and a second launch brings the window back instead
# of starting a second app.
xdotool windowfocus --sync "$win" || fail "cannot focus the window"
xdotool key ctrl+w
wait_for 10 hidden || fail "Ctrl+W did not hide the window"
kill -0 "$app_pid" 2>/dev/null || fail "closing the window ended the app"
# Wails hands the launch to the running app over D-Bus and exits with 1.
rc=0
timeout 30 bin/ruvllm-app --socket "$sock" >"$work/second.log" 2>&1 || rc=$?
[ "$rc" -le 1 ] || fail "the second launch did not hand over to the running app (exit $rc): $(cat "$work/second.log")"
wait_for 10 visible || fail "a second launch did not show the window"
[ "$(xdotool search --onlyvisible --name '^ruvllm$' | wc -l)" -eq 1 ] || fail "a second launch opened a second window"
echo "app-e2e: Ctrl+W hid the window, a second launch showed it again"
dbus-send --session --print-reply --dest="$item" /MenuBar com.canonical.dbusmenu.Event \
	int32:4 string:clicked variant:int32:0 uint32:0 >/dev/null || fail "tray Quit failed"
gone() { ! kill -0 "$app_pid" 2>/dev/null; }
wait_for 20 gone || fail "tray Quit did not end the app"
echo "app-e2e: tray $item hid, showed and quit the app"

if [ "$out" = "$work" ]; then echo "app-e2e: ok"; else echo "app-e2e: ok, screenshots in $out"; fi
