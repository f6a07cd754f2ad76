#!/usr/bin/env bats
# scripts/generate: the whole pipeline, text to text, as a tool (scripts/chat
# has tests/chat.bats).
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
	GEN="$ROOT/scripts/generate"
}

# The text of transformers' greedy continuation of a golden case.
greedy_text() { jq -r '.greedy_48[]' "$GOLDEN/shakespeare-tiny/$1.json" | tok decode; }

@test "generate: greedy text from \"ROMEO:\" is transformers' greedy continuation" {
	[ "$(printf 'ROMEO:' | tok encode | tr '\n' ' ')" = "$(jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/romeo.json") " ]
	run -0 "$GEN" "$TINY" "ROMEO:" --greedy -n 48
	[ "$output" = "$(greedy_text romeo)" ]
	tmpdir_empty
}

@test "generate: each flag reaches the tool whose table has it, anywhere on the line; - reads the prompt" {
	# --ctx 16 with a 3-token prompt leaves room for 14 tokens, and says so;
	# re-encoding may merge some, so 1..14 ids (a bare "at most 14" would
	# pass on no output at all).
	run --separate-stderr -0 bash -c "printf 'ROMEO:' | '$GEN' '$TINY' - --ctx 16 --threads 1 --greedy --ignore-eos -n 100 | tok encode | wc -l"
	[ "$output" -ge 1 ] && [ "$output" -le 14 ]
	[ "$stderr" = "sample: warning: the context is full (16 positions; forward --ctx sets it): generation stopped" ]
	# Without -n, at most 200 tokens.
	run --separate-stderr -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -v
	grep -q "^sample: stop: max tokens; 200 tokens" <<<"$stderr"
	# -v reaches both; -t, --mmap reach forward; --temp=0 and -n5 reach sample.
	run --separate-stderr -0 "$GEN" -t 1 "$TINY" --mmap "ROMEO:" --temp=0 -n5 -v
	[ "$output" = "$(jq -r '.greedy_48[:5][]' "$GOLDEN/shakespeare-tiny/romeo.json" | tok decode)" ]
	[[ "${stderr_lines[0]}" = "forward: $TINY: loaded in "*", mapped), "*" 1 thread" ]]
	grep -q "^sample: seed [0-9]*, temperature 0," <<<"$stderr"
	# --int8-activations reaches forward, which refuses it for a float model.
	run -2 "$GEN" "$TINY" "ROMEO:" --int8-activations
	assert_line --index 0 "forward: --int8-activations: $TINY has no int8 or int4 weights (quantize it first)"
	# The same seed, the same text for any thread count.
	run -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -n 20 --threads 2
	a=$output
	run -0 "$GEN" "$TINY" "ROMEO:" --seed 5 -n 20 --threads 1
	[ "$output" = "$a" ]
	tmpdir_empty
}

@test "generate: --help anywhere, --version; a flag no tool has is the script's usage error" {
	run -0 "$GEN" "$TINY" --help
	assert_line --index 0 "usage: generate [--chat] MODEL PROMPT|- [FLAGS...]"
	run -0 "$GEN" --version
	assert_output "generate (qwenpipe) $(cat "$ROOT/VERSION")"
	run -2 "$GEN" "$TINY" "x" --copy
	assert_output "generate: unknown option '--copy'
usage: generate [--chat] MODEL PROMPT|- [FLAGS...]"
	run -2 "$GEN" "$TINY" "x" --seed
	assert_line --index 0 "generate: --seed: missing value"
	run -2 "$GEN" "$TINY" "x" --greedy=1
	assert_line --index 0 "generate: --greedy takes no value"
	run -2 "$GEN" "$TINY"
	assert_line --index 0 "generate: expected a model and a prompt, got 1 operand(s)"
	run -2 "$GEN" "$TINY" "x" --system "Be brief."
	assert_line --index 0 "generate: --system needs --chat"
}

@test "generate: the first tool that failed gives the status, and only its message is shown" {
	run -1 "$GEN" "$BATS_TEST_TMPDIR/none" "x"
	assert_output "forward: $BATS_TEST_TMPDIR/none: No such file or directory"
	run -2 "$GEN" "$TINY" "x" --top-p 3
	assert_line --index 0 "sample: --top-p: 3 is out of range [0, 1]"
	refute_output --partial "forward"
	run -1 "$GEN" "$DATA/qwen2.5-0.5b-instruct" "hi"
	assert_output "generate: $DATA/qwen2.5-0.5b-instruct has no weights (model.safetensors, 988 MB): scripts/download-qwen fetches them"
	# A prompt too long for the context: an operand is "prompt", stdin
	# <stdin>.
	run -1 "$GEN" "$TINY" "hi hi hi" --ctx 2
	assert_output "forward: prompt: 3 ids do not fit in the context of 2 positions (--ctx)"
	run -1 bash -c "printf 'hi hi hi' | '$GEN' '$TINY' - --ctx 2"
	assert_output "forward: <stdin>: 3 ids do not fit in the context of 2 positions (--ctx)"
	# -n 0: nothing, and no status of a tool whose reader stopped early.
	run -0 "$GEN" "$TINY" "x" -n 0
	assert_output ""
	# The reader of generate going away is 141, quietly.
	run -0 bash -c "'$GEN' '$TINY' 'ROMEO:' --ignore-eos -n 100000 | head -c 10 > /dev/null; echo \${PIPESTATUS[0]}"
	assert_output 141
	tmpdir_empty
}

@test "generate: --stop ends the text before the stop string, and the whole pipeline with it" {
	full=$(greedy_text romeo)
	stop=$(sed -n 2p <<<"$full" | cut -c 1-6)  # text from the second line
	[ -n "$stop" ]
	run -0 timeout 30 "$GEN" "$TINY" "ROMEO:" --greedy -n 48 --stop "$stop" --stop "no such text"
	[ "$output" = "$(printf '%s' "${full%%"$stop"*}")" ]
	[[ "$output" != *"$stop"* ]]
	# The sampler upstream saw its stdout close: nothing is left running.
	run -0 timeout 30 "$GEN" "$TINY" "ROMEO:" --ignore-eos -n 100000 --seed 1 --stop e
	[[ "$output" != *e* ]]
	tmpdir_empty
}

@test "generate, chat: llama.cpp's -m, -p, -f, -sys and --repeat-last-n; its other flags say they mean nothing here" {
	want=$(printf 'ROMEO:' | tok encode | forward "$TINY" | sample --greedy -n 6 | tok decode)
	run -0 "$GEN" -m "$TINY" -p "ROMEO:" --greedy -n 6
	assert_output "$want"
	printf 'ROMEO:' > "$BATS_TEST_TMPDIR/p.txt"
	run -0 "$GEN" -n 6 -f "$BATS_TEST_TMPDIR/p.txt" --greedy -m "$TINY"
	assert_output "$want"
	# -sys is the system message, not -s ys (a seed).
	want=$(tok chat --system 'Speak as a king.' --user Hi | forward "$TINY" | sample --greedy -n 6 | tok decode)
	run -0 "$GEN" --chat "$TINY" Hi -sys "Speak as a king." --greedy -n 6
	assert_output "$want"
	run -0 bash -c "echo Hi | '$ROOT/scripts/chat' -m '$TINY' -sys 'Speak as a king.' --greedy -n 6"
	assert_output "$want"
	# --repeat-last-n: -1 is what the penalty covers here, 0 turns it off.
	run -0 "$GEN" "$TINY" "ROMEO:" --repeat-penalty 1.5 --repeat-last-n 0 --greedy -n 6
	assert_output "$("$GEN" "$TINY" "ROMEO:" --greedy -n 6)"
	run -0 "$GEN" "$TINY" "ROMEO:" --repeat-penalty 1.5 --repeat-last-n -1 --greedy -n 6
	assert_output "$("$GEN" "$TINY" "ROMEO:" --repeat-penalty 1.5 --greedy -n 6)"
	run -2 "$GEN" "$TINY" "ROMEO:" --repeat-last-n 64
	assert_line --index 0 "generate: --repeat-last-n: 64: the repetition penalty covers the whole context here (-1); 0 turns it off"
	run -2 "$GEN" "$TINY" "ROMEO:" -ngl 99
	assert_line --index 0 "generate: '-ngl' is llama.cpp's number of layers on the GPU, which has no meaning here"
	run -2 "$ROOT/scripts/chat" "$TINY" -p hi
	assert_line --index 0 "chat: '-p' is llama.cpp's prompt flag (the chat reads its messages as you type them), which has no meaning here"
}

@test "generate: --chat renders one user turn, after --system; flags before the model too" {
	run -0 "$GEN" --greedy -n 6 --chat "$TINY" "Hi" --system "Speak as a king."
	want=$(tok chat --system 'Speak as a king.' --user Hi | forward "$TINY" | sample --greedy -n 6 | tok decode)
	[ "$output" = "$want" ]
	run -0 bash -c "printf 'Hi' | '$GEN' '$TINY' - --chat --greedy -n 6"
	[ "$output" = "$(tok chat --user Hi | forward "$TINY" | sample --greedy -n 6 | tok decode)" ]
}

@test "generate: on a terminal the text ends with a newline" {
	run -0 script -qec "'$GEN' '$TINY' ROMEO: --greedy -n 3" /dev/null
	[[ "$output" = *$'\r' ]]
	run -0 bash -c "'$GEN' '$TINY' ROMEO: --greedy -n 3 | od -An -c | tail -n 1"
	refute_output --partial '\n'
}

@test "download-qwen: a host it cannot reach is one line naming it and HF_ENDPOINT" {
	# Port 9 (discard) on the loopback: refused at once, no network needed;
	# --force, so that weights already there do not end it first.
	HF_ENDPOINT=http://127.0.0.1:9 run -1 --separate-stderr "$ROOT/scripts/download-qwen" --force
	[ "$output" = "" ]
	[ "$stderr" = "download-qwen: cannot reach 127.0.0.1:9 (offline? HF_ENDPOINT names a mirror)" ]
	run -0 ls -A "$DATA/qwen2.5-0.5b-instruct"
	refute_output --partial ".model.safetensors."
}

@test "numerics-matrix: each program once per SIMD level this CPU has, no OpenBLAS axis" {
	# The engine links no OpenBLAS (tests/link.bats); its levels are what
	# test_kernels names as this machine's and those below it.
	run -0 "$ROOT/scripts/numerics-matrix" kernels
	top=$(QWENPIPE_SIMD= "$ROOT/build/tests/test_kernels" | sed -n 's/^this machine: //p')
	case $top in scalar) n=1 ;; avx2) n=2 ;; avx512) n=3 ;; *) false ;; esac
	refute_output --partial "OpenBLAS"
	refute_output --partial "skip"
	assert_line --index 0 "ok   kernels  $top"
	assert_line "numerics-matrix: $n passed, 0 failed"
}
