#!/usr/bin/env bats
# Who links OpenBLAS: only bench, where OpenBLAS's sgemm is the reference our
# kernels are measured against. The engine's tools never call it, so they
# must not load it (its threads and its start-up cost come with it). And
# who links libmicrohttpd: only serve, the HTTP server.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
}

@test "no tool but bench links libopenblas" {
	for d in "$ROOT"/tools/*/; do
		t="$(basename "$d")"
		[ "$t" = bench ] && continue
		run -0 ldd "$BIN/$t"
		refute_output --partial libopenblas
	done
}

@test "bench links libopenblas (so the check above can see it)" {
	run -0 ldd "$BIN/bench"
	assert_output --partial libopenblas
}

@test "no tool but serve links libmicrohttpd" {
	for d in "$ROOT"/tools/*/; do
		t="$(basename "$d")"
		[ "$t" = serve ] && continue
		run -0 ldd "$BIN/$t"
		refute_output --partial libmicrohttpd
	done
}

@test "serve links libmicrohttpd, and not libopenblas" {
	run -0 ldd "$BIN/serve"
	assert_output --partial libmicrohttpd
	refute_output --partial libopenblas
}
