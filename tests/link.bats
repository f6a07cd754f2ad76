#!/usr/bin/env bats
# Who links OpenBLAS: only bench, where OpenBLAS's sgemm is the reference our
# kernels are measured against. The engine's tools never call it, so they
# must not load it (its threads and its start-up cost come with it).
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
