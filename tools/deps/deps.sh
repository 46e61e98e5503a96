#!/usr/bin/env bash
# What `make test` needs beyond Go, in one place: `make test` and .ci/run
# both call it.
#
#   tools/deps/deps.sh install        as root with apt-get: install the Debian
#                                     packages that are missing (NO_INSTALL=1:
#                                     don't); otherwise say which steps will be
#                                     skipped for want of which package
#   tools/deps/deps.sh check          only say what is missing
#   tools/deps/deps.sh run STEP CMD…  run CMD when STEP's needs are met, else
#                                     print "make test: skipping STEP: …" naming
#                                     the packages and exit 0 — or exit 1 when
#                                     CI=true, where a test that cannot run is a
#                                     failure
#
# Steps: arm64 (qemu-user), frontend (node >= 20.19 and npm),
# frontend-browser (that and chromium), app-e2e (the Wails app's build
# headers, Xvfb, xdotool, imagemagick, dbus, fonts). Go tests that need a
# tool (dbus-daemon, setpriv, curl, g++, node) skip themselves with a
# reason; `install` installs those tools too.
set -uo pipefail

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=19

# Every Debian package make test can use, by step. go-tests: tests inside
# `go test ./...` that skip without them.
pkgs_go_tests="dbus util-linux curl g++ desktop-file-utils git"
pkgs_arm64="qemu-user"
pkgs_frontend="nodejs npm"
pkgs_frontend_browser="chromium"
pkgs_app_e2e="gcc libc6-dev pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev xvfb xdotool imagemagick dbus fonts-dejavu-core"

have() { command -v "$1" >/dev/null 2>&1; }

# node_ok says why node cannot run the frontend (nothing when it can).
node_problem() {
	if ! have node; then
		echo "node is not installed (apt-get install nodejs npm; Debian 12's nodejs 18 is too old: node >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR from nodesource)"
		return
	fi
	local v major minor
	v=$(node -p 'process.versions.node' 2>/dev/null) || { echo "node does not run"; return; }
	major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
	if [ "$major" -lt "$NODE_MIN_MAJOR" ] || { [ "$major" -eq "$NODE_MIN_MAJOR" ] && [ "$minor" -lt "$NODE_MIN_MINOR" ]; }; then
		echo "node $v is too old for vite 8 (need >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR, e.g. from nodesource)"
		return
	fi
	have npm || echo "npm is not installed (apt-get install npm)"
}

# missing STEP prints why STEP cannot run, one reason per line (nothing
# when it can).
missing() {
	case "$1" in
	arm64)
		have qemu-aarch64 || echo "qemu-aarch64 is not installed (apt-get install qemu-user)" ;;
	frontend)
		node_problem ;;
	frontend-browser)
		node_problem
		[ -x "$CHROMIUM" ] || echo "$CHROMIUM is not installed (apt-get install chromium, or set CHROMIUM=/path/to/chromium)" ;;
	app-e2e)
		node_problem
		have gcc || echo "gcc is not installed (apt-get install gcc libc6-dev)"
		if ! have pkg-config; then
			echo "pkg-config is not installed (apt-get install pkg-config)"
		else
			pkg-config --exists gtk+-3.0 || echo "the GTK 3 headers are not installed (apt-get install libgtk-3-dev)"
			pkg-config --exists webkit2gtk-4.1 || echo "the WebKitGTK 4.1 headers are not installed (apt-get install libwebkit2gtk-4.1-dev)"
		fi
		have Xvfb || echo "Xvfb is not installed (apt-get install xvfb)"
		have xdotool || echo "xdotool is not installed (apt-get install xdotool)"
		have import || echo "imagemagick is not installed (apt-get install imagemagick)"
		{ have dbus-daemon && have dbus-run-session; } || echo "dbus is not installed (apt-get install dbus)"
		if have dpkg-query && ! dpkg-query -W -f='${Status}' fonts-dejavu-core 2>/dev/null | grep -q 'install ok installed'; then
			echo "fonts-dejavu-core is not installed (apt-get install fonts-dejavu-core)"
		fi ;;
	*)
		echo "deps.sh: unknown step $1" >&2
		exit 2 ;;
	esac
}

# present PKG says whether Debian package PKG, or what it provides, is
# there: by its command or pkg-config module where it has one (node from
# nodesource or nvm counts as nodejs), else by dpkg.
present() {
	case "$1" in
	nodejs) have node ;;
	npm) have npm ;;
	qemu-user) have qemu-aarch64 ;;
	chromium) [ -x "$CHROMIUM" ] ;;
	xvfb) have Xvfb ;;
	imagemagick) have import ;;
	dbus) have dbus-daemon && have dbus-run-session ;;
	util-linux) have setpriv ;;
	desktop-file-utils) have desktop-file-validate ;;
	libgtk-3-dev) have pkg-config && pkg-config --exists gtk+-3.0 ;;
	libwebkit2gtk-4.1-dev) have pkg-config && pkg-config --exists webkit2gtk-4.1 ;;
	curl | g++ | gcc | git | pkg-config | xdotool) have "$1" ;;
	*) dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' ;;
	esac
}

# missing_packages lists the Debian packages of every step that are not
# there.
missing_packages() {
	local p
	for p in $pkgs_go_tests $pkgs_arm64 $pkgs_frontend $pkgs_frontend_browser $pkgs_app_e2e; do
		present "$p" || echo "$p"
	done | sort -u
}

# go_problem says why `go` cannot build the module (nothing when it can).
# Go 1.21 or later fetches the toolchain go.mod asks for by itself.
go_problem() {
	if ! have go; then
		echo "Go is not installed: make test needs go >= 1.21 on PATH (it fetches the toolchain go.mod names): https://go.dev/dl"
		return
	fi
	local v
	v=$(go env GOVERSION 2>/dev/null) || v=$(go version | awk '{print $3}')
	case "$v" in
	go1.1[0-9]* | go1.[0-9] | go1.[0-9].* | go1.20*)
		echo "$v is too old: make test needs go >= 1.21 (it fetches the toolchain go.mod names): https://go.dev/dl" ;;
	esac
}

report() {
	local step why any=0
	for step in arm64 frontend frontend-browser app-e2e; do
		why=$(missing "$step")
		[ -z "$why" ] && continue
		any=1
		echo "make test will skip $step: $(echo "$why" | paste -sd ';' | sed 's/;/; /g')"
	done
	local tool
	for tool in dbus-daemon:dbus setpriv:util-linux curl:curl g++:g++; do
		have "${tool%%:*}" || echo "some Go tests will skip: ${tool%%:*} is not installed (apt-get install ${tool#*:})"
	done
	return $any
}

case "${1:-}" in
check | install)
	why=$(go_problem)
	if [ -n "$why" ]; then
		echo "deps.sh: $why" >&2
		[ "$1" = check ] || exit 1
	fi ;;
esac

case "${1:-}" in
check)
	report
	exit 0 ;;
install)
	if ! have dpkg-query || ! have apt-get; then
		echo "deps.sh: no apt-get here: nothing installed"
		report
		exit 0
	fi
	need=$(missing_packages | paste -sd ' ')
	if [ -z "$need" ]; then
		report
		exit 0
	fi
	if [ -n "${NO_INSTALL:-}" ]; then
		echo "deps.sh: NO_INSTALL is set: not installing $need"
	elif [ "$(id -u)" != 0 ]; then
		echo "deps.sh: not root: not installing $need (sudo apt-get install $need)"
	else
		echo "deps.sh: installing $need"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $need ||
			echo "deps.sh: apt-get install failed: the steps that need those packages are skipped"
	fi
	report
	exit 0 ;;
run)
	step=${2:?usage: deps.sh run STEP COMMAND...}
	shift 2
	why=$(missing "$step") || exit 2
	if [ -n "$why" ]; then
		echo "make test: skipping $step: $(echo "$why" | paste -sd ';' | sed 's/;/; /g')" >&2
		if [ "${CI:-}" = true ]; then
			echo "make test: CI=true: a test step that cannot run is a failure" >&2
			exit 1
		fi
		exit 0
	fi
	exec "$@" ;;
*)
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit 2 ;;
esac
