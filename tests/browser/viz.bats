#!/usr/bin/env bats
# The page scripts/viz writes, in a real browser: Debian's headless Chromium
# (/usr/bin/chromium; scripts/deps --browser) driven by playwright-core
# (npm ci in tests/browser; it never downloads a browser). Run by
# `make browser`, not `make test`. When the browser cannot start, the test
# fails and says so. The screenshot is kept in tests/browser/artifacts/.

bats_require_minimum_version 1.5.0
ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
export BIN="${BIN:-$ROOT/bin}"
ART="$ROOT/tests/browser/artifacts"

setup() {
	[ -d "$ROOT/tests/browser/node_modules/playwright-core" ] || {
		echo "tests/browser: playwright-core is not installed: run (cd tests/browser && npm ci)" >&2
		return 1
	}
}

@test "in Chromium: every view renders, the bars are the trace's, layer and head change the heatmap, markup stays text" {
	mkdir -p "$ART"
	cd "$BATS_TEST_TMPDIR"
	"$ROOT/scripts/viz" --prompt 'ROMEO: <b>bold</b><script>window.pwned=1</script> &amp;' \
		-n 24 --seed 5 -o page.html --keep traces
	run node "$ROOT/tests/browser/viz.mjs" page.html traces "$ART/viz.png"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$ART/viz.png" ]
}

@test "a browser that cannot start fails the test with a message that says so" {
	cd "$BATS_TEST_TMPDIR"
	"$ROOT/scripts/viz" --prompt 'ROMEO:' -n 2 --seed 5 -o page.html --keep traces
	CHROMIUM=/nonexistent/chromium run -1 node "$ROOT/tests/browser/viz.mjs" page.html traces shot.png
	[ "${lines[0]%%:*}" = "viz.mjs" ]
	[[ ${lines[0]} == "viz.mjs: the browser could not start (/nonexistent/chromium): "* ]]
}
