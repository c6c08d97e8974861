# Sourced by the scripts beside it: running a command as root, and
# installing Debian packages with apt-get.

# say LINE: one line on stdout, prefixed with the script's name.
say() { echo "${SAY_PREFIX:-test deps}: $*"; }

# fail LINE: the line on stderr, then exit 1.
fail() {
	echo "${SAY_PREFIX:-test deps}: $*" >&2
	exit 1
}

# can_root: true when as_root can run a command: this is root, or sudo exists.
can_root() { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }

# as_root CMD...: CMD as root: directly when root, else through sudo (with
# -n when there is no terminal to ask a password on, so that it fails
# rather than waits).
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif [ -t 0 ]; then
		sudo "$@"
	else
		sudo -n "$@"
	fi
}

# apt_install WHY PACKAGE...: apt-get update, then install PACKAGE... from
# Debian's packages, non-interactively, saying so in one line; fails naming
# the command to run by hand where this is not Debian or Ubuntu, or is
# neither root nor has sudo.
apt_install() {
	local why=$1
	shift
	local by_hand="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $*"
	command -v apt-get >/dev/null 2>&1 ||
		fail "$why, and there is no apt-get here (not Debian or Ubuntu): install $* with this system's packages, then run make again"
	can_root ||
		fail "$why, and this is not root and has no sudo: run, as root: $by_hand"
	local s=
	[ $# -eq 1 ] || s=s
	say "installing Debian's $* package$s…"
	as_root apt-get update -qq ||
		fail "apt-get update failed: run, as root: $by_hand"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
		fail "installing $* failed: run, as root: $by_hand"
}
