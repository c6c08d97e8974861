#!/usr/bin/env bash
# The static checks `make check` runs, built from the Go module proxy at
# pinned versions into one folder (bin/tools), outside the product's go.mod:
# `go install PKG@VERSION` builds each in its own module's context. A binary
# already there, of that version and built by this Go, is left as it is, so
# a second run builds nothing and takes no time.
#
#   scripts/tools.sh DIR PKG@VERSION...
#
# GO names the go command (default: go).
set -euo pipefail
SAY_PREFIX=tools
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || fail "usage: $0 DIR PKG@VERSION..."
dir=$1
shift
go=${GO:-go}
goversion=$("$go" env GOVERSION)

# built BIN PKG VERSION: true when BIN exists and `go version -m` says it is
# PKG at VERSION, built by this Go (a checker built by an older Go may not
# read code written for a newer one).
built() {
	local info
	[ -x "$1" ] || return 1
	info=$("$go" version -m "$1" 2>/dev/null) || return 1
	awk -v g="$goversion" -v p="$2" -v v="$3" '
		NR == 1 { go = ($2 == g) }
		$1 == "path" { path = ($2 == p) }
		$1 == "mod" { mod = ($3 == v) }
		END { exit !(go && path && mod) }' <<<"$info"
}

for spec in "$@"; do
	pkg=${spec%@*}
	version=${spec##*@}
	[ "$pkg" != "$spec" ] || fail "$spec: want PKG@VERSION"
	bin=$dir/${pkg##*/}
	if built "$bin" "$pkg" "$version"; then
		continue
	fi
	say "installing $pkg@$version into $dir…"
	GOBIN=$dir "$go" install "$spec" ||
		fail "go install $spec failed"
	built "$bin" "$pkg" "$version" ||
		fail "$bin is not $pkg $version after go install"
done
