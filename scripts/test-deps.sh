#!/usr/bin/env bash
# What the tests need beyond Go, installed from Debian's packages when
# missing: `make test` runs it before the tests (chromium, for the Web UI
# tests in integration/webui_test.go), `make check-compose` with
# docker-compose. Each command found on PATH is left as it is, so a second
# run installs nothing and takes no time.
#
#   scripts/test-deps.sh [COMMAND...]   (default: chromium)
#
# COMMAND is chromium or docker-compose, each Debian's package of that
# name, or agui-client, mcp-client, mcp-everything or a2a-client, the npm
# packages of integration/agui's, integration/mcpclient's,
# integration/mcpeverything's or integration/a2a's lockfile.
# As root it runs apt-get itself, through sudo when not root; with neither
# it fails, naming the command to run as root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# npm_ci DIR WHAT installs integration/DIR's npm packages exactly as its
# lockfile pins them (npm ci); again only when the lockfile changed since.
npm_ci() {
	local dir
	dir="$(dirname "$0")/../integration/$1"
	command -v npm >/dev/null || fail "npm not on PATH: the tests of $2 need Node.js and npm"
	if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
		say "installing $2 (npm ci in integration/$1)"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	else
		say "$2 is installed (integration/$1/node_modules)"
	fi
}

[ $# -gt 0 ] || set -- chromium
missing=()
for cmd in "$@"; do
	case $cmd in
	chromium | docker-compose) ;;
	agui-client)
		# The official AG-UI client, for integration/agui_test.go.
		npm_ci agui "the AG-UI client"
		continue
		;;
	a2a-client)
		# The official A2A JavaScript SDK (A2A v1.0), for integration/a2a_test.go.
		npm_ci a2a "the A2A JavaScript SDK"
		continue
		;;
	mcp-client)
		# The official MCP TypeScript SDK, for integration/mcp_server_test.go.
		npm_ci mcpclient "the MCP TypeScript client"
		continue
		;;
	mcp-everything)
		# The MCP project's reference server, for integration/mcp_stdio_test.go.
		npm_ci mcpeverything "the MCP reference server"
		continue
		;;
	*) fail "unknown dependency $cmd (chromium, docker-compose, agui-client, mcp-client, mcp-everything or a2a-client)" ;;
	esac
	if path=$(command -v "$cmd"); then
		say "$cmd found at $path"
	else
		missing+=("$cmd")
	fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

apt_install "${missing[*]} not on PATH" "${missing[@]}"
for cmd in "${missing[@]}"; do
	path=$(command -v "$cmd") || fail "$cmd is still not on PATH after installing Debian's $cmd package"
	say "$cmd installed at $path"
done
