#!/usr/bin/env bats
# scripts/generate and scripts/chat: the whole pipeline, text to text.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
	GEN="$ROOT/scripts/generate"
	CHAT="$ROOT/scripts/chat"
}

# The text of transformers' greedy continuation of a golden case.
greedy_text() { jq -r '.greedy_48[]' "$GOLDEN/shakespeare-tiny/$1.json" | tok decode; }

@test "generate: greedy text from \"ROMEO:\" is transformers' greedy continuation" {
	[ "$(printf 'ROMEO:' | tok encode | tr '\n' ' ')" = "$(jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/romeo.json") " ]
	run -0 "$GEN" "$TINY" "ROMEO:" --greedy -n 48
	[ "$output" = "$(greedy_text romeo)" ]
	tmpdir_empty
}

@test "generate: forward's flags go to forward, the others to sample; - reads the prompt" {
	# --ctx 16 with a 3-token prompt leaves room for 14 tokens.
	run --separate-stderr -0 bash -c "printf 'ROMEO:' | '$GEN' '$TINY' - --ctx 16 --threads 1 --greedy --ignore-eos -n 100 | tok encode | wc -l"
	[ "$output" -le 14 ]
	[ "$stderr" = "sample: warning: the context is full (16 positions; forward --ctx sets it): generation stopped" ]
	# Without -n, at most 200 tokens.
	run --separate-stderr -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -v
	[[ "${stderr_lines[1]}" = "sample: stop: max tokens; 200 tokens"* ]]
	run -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -n 20 --threads 2
	a=$output
	run -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -n 20 --threads 1
	[ "$output" = "$a" ]
}

@test "generate: usage errors exit 2, a tool's error exits with its status" {
	run -2 "$GEN" "$TINY"
	assert_output "usage: scripts/generate [--chat] MODEL PROMPT|- [FLAGS...]"
	run -2 "$GEN" "$TINY" "x" --top-p 3
	assert_line --index 0 "sample: --top-p: 3 is out of range [0, 1]"
	run -1 "$GEN" "$BATS_TEST_TMPDIR/none" "x"
	assert_line --index 0 "forward: $BATS_TEST_TMPDIR/none: No such file or directory"
}

@test "chat: keeps the history; the second answer is what the pipeline gives for the whole conversation" {
	d=$BATS_TEST_TMPDIR
	gen() { forward "$TINY" | sample --greedy -n 12 | tok decode; }
	tok chat --user "Who art thou?" | gen > "$d/a1"
	jq -n --rawfile a "$d/a1" '[{role: "user", content: "Who art thou?"},
		{role: "assistant", content: $a}, {role: "user", content: "Whence comest thou?"}]' > "$d/conv"
	tok chat < "$d/conv" | gen > "$d/a2"
	{ cat "$d/a1"; echo; cat "$d/a2"; echo; } > "$d/want"
	printf 'Who art thou?\nWhence comest thou?\n/quit\nnot read\n' | "$CHAT" "$TINY" --greedy -n 12 > "$d/got"
	cmp "$d/want" "$d/got"
	# Without the history the second answer would differ.
	tok chat --user "Whence comest thou?" | gen > "$d/alone"
	! cmp -s "$d/alone" "$d/a2"
	tmpdir_empty
}

@test "chat: end of input ends it with status 0; --system is the first message" {
	run -0 bash -c "printf 'Hi\n' | '$CHAT' '$TINY' --system 'Speak as a king.' --greedy -n 6"
	want=$(tok chat --system 'Speak as a king.' --user Hi | forward "$TINY" | sample --greedy -n 6 | tok decode)
	[ "$output" = "$want" ]
	run -2 "$CHAT"
	assert_output "usage: scripts/chat MODEL [--system TEXT] [FLAGS...]"
}
