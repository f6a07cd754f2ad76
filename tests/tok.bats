#!/usr/bin/env bats
# tok: encode, decode and chat against HuggingFace's ids (tests/golden/),
# the output modes, bytes that are not UTF-8, and every kind of bad input
# refused with one line.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	Q="$DATA/qwen2.5-0.5b-instruct"
}

@test "encode works with no arguments from any directory (the bundled tokenizer)" {
	cd "$BATS_TEST_TMPDIR"
	run -0 bash -c 'printf "Hello, world!" | tok encode'
	[ "$output" = "$(printf '9707\n11\n1879\n0')" ]
}

@test "encode then decode gives the text back" {
	run -0 bash -c "tok encode < '$TINY/heldout.txt' | tok decode | cmp - '$TINY/heldout.txt'"
}

@test "--pieces shows each id and its escaped text" {
	# ids from HuggingFace tokenizers 0.23.2
	run -0 bash -c 'printf "It'"'"'s  a\\\\b\n\tx\xc3\xa9" | tok encode --pieces'
	[ "$output" = "$(printf '%s\t%s\n' 2132 It 594 "'s" 220 ' ' 264 ' a' 43456 '\\b' 198 '\n' 10225 '\tx' 963 'é')" ]
}

@test "NFC can make the text longer: U+0F78 becomes U+0FB3 U+0F80, more ids than input bytes" {
	# ids from HuggingFace tokenizers 0.23.2 for "a\u0F78b" (5 bytes, 8 ids);
	# the case a fuzzer found against a property that assumed ids <= bytes
	run -0 bash -c 'printf "a\xe0\xbd\xb8b" | tok encode'
	[ "$output" = "$(printf '%s\n' 64 156 122 111 156 122 222 65)" ]
}

@test "--count and --json write one line per input" {
	printf 'Hello, world!' > "$BATS_TEST_TMPDIR/a"
	printf 'hi' > "$BATS_TEST_TMPDIR/b"
	run -0 tok encode --count "$BATS_TEST_TMPDIR/a" - "$BATS_TEST_TMPDIR/b" < /dev/null
	[ "$output" = "$(printf '4\n0\n1')" ]
	run -0 tok encode --json "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[ "$output" = "$(printf '[9707,11,1879,0]\n[6023]')" ]
}

@test "special-token text is the special token unless --no-special" {
	run -0 bash -c 'printf "<|im_start|>user<tool_call>" | tok encode --json'
	[ "$output" = "[151644,872,151657]" ]
	# from HuggingFace tokenizers 0.23.2 (above, and below with the special
	# tokens taken out of added_tokens, which is what --no-special means); <tool_call> (not special) stays one token
	run -0 bash -c 'printf "<|im_start|>user<tool_call>" | tok encode --json --no-special'
	[ "$output" = "[27,91,318,4906,91,29,872,151657]" ]
}

@test "decode --skip-special drops special tokens only" {
	run -0 bash -c 'echo 151644 872 151657 151645 | tok decode --skip-special'
	[ "$output" = "user<tool_call>" ]
	run -0 bash -c 'echo 151644 872 151645 | tok decode'
	[ "$output" = "<|im_start|>user<|im_end|>" ]
}

@test "decode reads ids separated by any whitespace, across lines" {
	run -0 bash -c 'printf "9707\t11\n\n  1879 \r\n0" | tok decode'
	[ "$output" = "Hello, world!" ]
}

@test "a character split across two tokens comes out whole, and a lone partial byte at the end as it is" {
	# 127 and 102 are the byte tokens of 0xC3 and 0xA9: "é" in UTF-8
	run -0 bash -c 'echo 127 102 | tok decode | od -An -tx1'
	[ "$output" = " c3 a9" ]
	run -0 bash -c 'echo 127 | tok decode | od -An -tx1'
	[ "$output" = " c3" ]
}

@test "decode: a token that is not a number is an error naming it and its line" {
	run --separate-stderr -1 bash -c 'printf "9707\n11 abc\n" | tok decode'
	[ "$stderr" = "tok: <stdin>: line 2: 'abc' is not a token id" ]
	run --separate-stderr -1 bash -c 'printf "\n\n-1\n" | tok decode'
	[ "$stderr" = "tok: <stdin>: line 3: '-1' is not a token id" ]
	# shown escaped and cut, so the message stays one printable line
	run --separate-stderr -1 bash -c 'printf "1\n9\x1b[31m\x00x 2" | tok decode'
	[ "$stderr" = "tok: <stdin>: line 2: '9\x1B[31m\x00x' is not a token id" ]
	run --separate-stderr -1 bash -c 'printf "%040d" 7 | tok decode'
	[ "$stderr" = "tok: <stdin>: line 1: '000000000000000000000000...' is not a token id" ]
}

@test "decode: an id outside the vocabulary is an error naming it and its line" {
	printf '1\n2\n151936\n' > "$BATS_TEST_TMPDIR/ids"
	run --separate-stderr -1 tok decode "$BATS_TEST_TMPDIR/ids"
	[ "$stderr" = "tok: $BATS_TEST_TMPDIR/ids: line 3: 151936 is not in the vocabulary (ids 0..151664)" ]
	run --separate-stderr -1 bash -c 'echo 99999999999 | tok decode'
	[ "$stderr" = "tok: <stdin>: line 1: '99999999999' is not a token id" ]
}

@test "bytes that are not UTF-8: encoded with one warning, decoded back exactly" {
	printf 'a\xffb \xc3(\xe2\x82 ok\xf0\x9f\x98\n\xed\xa0\x80\xc0\xaf' > "$BATS_TEST_TMPDIR/bad"
	run --separate-stderr -0 tok encode "$BATS_TEST_TMPDIR/bad"
	[ "$stderr" = "tok: warning: $BATS_TEST_TMPDIR/bad: 12 bytes are not valid UTF-8, encoded as raw bytes (which byte-level BPE merges as any others)" ]
	tok encode "$BATS_TEST_TMPDIR/bad" 2>/dev/null | tok decode | cmp - "$BATS_TEST_TMPDIR/bad"
	# a lone invalid byte is its byte token: 0xFF is "ÿ" in the alphabet, id 187
	run -0 bash -c 'printf "\xff" | tok encode 2>/dev/null'
	[ "$output" = 187 ]
}

@test "--tokenizer takes a file or a model directory, and so does QWENPIPE_TOKENIZER" {
	run -0 bash -c "printf hi | tok encode --tokenizer '$Q'"
	[ "$output" = 6023 ]
	run -0 bash -c "printf hi | QWENPIPE_TOKENIZER='$TINY/tokenizer.json' tok encode"
	[ "$output" = 6023 ]
	run --separate-stderr -1 bash -c "printf hi | QWENPIPE_TOKENIZER=/nonexistent tok encode"
	[ "$stderr" = "tok: /nonexistent: No such file or directory" ]
}

@test "--tokenizer takes a container: its embedded tokenizer.json, no other file" {
	container_without_hi
	Q8=$BATS_TEST_TMPDIR/m.q8
	run -0 bash -c "printf hi | tok encode --tokenizer '$Q8' | paste -sd,"
	[ "$output" = 71,72 ]
	run -0 bash -c "printf hi | QWENPIPE_TOKENIZER='$Q8' tok encode | paste -sd,"
	[ "$output" = 71,72 ]
	run -0 bash -c "echo 71 72 | tok decode --tokenizer '$Q8'"
	[ "$output" = hi ]
	# it carries no chat template, and says so
	run --separate-stderr -1 tok chat --user hi --tokenizer "$Q8"
	[ "$stderr" = "tok: $Q8: a container carries no tokenizer_config.json, so no chat template (give --tokenizer the model directory it was made from)" ]
}

# refuses SED_SCRIPT MESSAGE: the bundled tokenizer.json edited by sed is
# refused by tok encode with exit 1 and "tok: FILE: MESSAGE".
refuses() {
	local t="$BATS_TEST_TMPDIR/t.json"
	sed "$1" "$Q/tokenizer.json" > "$t"
	run --separate-stderr -1 tok encode --tokenizer "$t" < /dev/null
	[ "$stderr" = "tok: $t: $2" ] || { echo "got: $stderr" >&2; return 1; }
}

@test "a tokenizer.json with an unsupported component is refused, naming it" {
	refuses 's/"byte_fallback": false/"byte_fallback": true/' \
		"model.byte_fallback: true is not supported"
	refuses 's/"type": "NFC"/"type": "NFKC"/' "normalizer: type 'NFKC' is not supported"
	refuses 's/\\\\p{N}| ?/\\\\p{N}{1,3}| ?/' \
		"pre_tokenizer: this Split pattern is not supported (only Qwen2's is implemented)"
	refuses '0,/"lstrip": false/s//"lstrip": true/' \
		"added_tokens[0] '<|endoftext|>': lstrip: true is not supported"
	# HuggingFace ignores an added token's id and numbers it after the
	# vocabulary: a file that disagrees is refused, not encoded differently
	refuses 's/"id": 151644,/"id": 151650,/' \
		"added_tokens[1] '<|im_start|>': id 151650, but HuggingFace would give it 151644"
	refuses 's/"!": 0,/"!": 999999,/' \
		"ids run to 999999, but there are only 151665 tokens (at most half the ids may be unused)"
	# cut after line 37,000, in the middle of the vocabulary
	refuses '37000q' "not valid JSON (line 37001, column 1): unexpected end of text, expected a string key"
}

@test "merges written as [\"a\", \"b\"] pairs give the same ids as \"a b\" strings" {
	T="$BATS_TEST_TMPDIR/pairs.json"
	jq -c '.model.merges |= map(split(" "))' "$Q/tokenizer.json" > "$T"
	[ "$(jq -c '.model.merges[0]' "$T")" = '["Ġ","Ġ"]' ]
	tok encode < "$TINY/heldout.txt" > "$BATS_TEST_TMPDIR/want"
	tok encode --tokenizer "$T" < "$TINY/heldout.txt" | cmp - "$BATS_TEST_TMPDIR/want"
}

@test "chat renders and encodes every golden conversation exactly" {
	while IFS= read -r line; do
		msgs="$(jq -c .messages <<<"$line")"
		flag=; [ "$(jq .add_generation_prompt <<<"$line")" = true ] || flag=--no-generation-prompt
		[ "$(tok chat $flag --text <<<"$msgs")" = "$(jq -j .text <<<"$line")" ]
		[ "$(tok chat $flag --json <<<"$msgs")" = "$(jq -c .ids <<<"$line")" ]
	done < "$GOLDEN/chat-template.jsonl"
}

@test "chat --user and --system stand for a conversation" {
	run -0 tok chat --user Hello --json
	[ "$output" = "$(head -1 "$GOLDEN/chat-template.jsonl" | jq -c .ids)" ]
	run -0 tok chat --system "Be concise." --user "Explain RoPE in one sentence." --text
	[ "$output" = "$(sed -n 3p "$GOLDEN/chat-template.jsonl" | jq -j .text)" ]
}

@test "chat takes content as OpenAI's text parts, joined by newlines" {
	run --separate-stderr tok chat --text <<<'[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]}]'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n<|im_start|>assistant')" ]
	run --separate-stderr -1 tok chat <<<'[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]'
	[ "$stderr" = 'tok: <stdin>: messages[0]: content[1]: only parts of type "text" are supported' ]
	run --separate-stderr -1 tok chat <<<'[{"role":"user","content":[{"type":"text","text":7}]}]'
	[ "$stderr" = "tok: <stdin>: messages[0]: content[0]: text is not a string" ]
	run --separate-stderr -1 tok chat <<<'[{"role":"user","content":null}]'
	[ "$stderr" = "tok: <stdin>: messages[0]: content is not a string or an array of text parts" ]
}

@test "chat refuses a different template and bad messages" {
	D="$BATS_TEST_TMPDIR/m"
	mkdir "$D"
	ln -s "$Q/tokenizer.json" "$D/tokenizer.json"
	jq '.chat_template |= sub("You are Qwen"; "You are Bob")' "$Q/tokenizer_config.json" > "$D/tokenizer_config.json"
	run --separate-stderr -1 tok chat --tokenizer "$D" --user hi
	[ "$stderr" = "tok: $D/tokenizer_config.json: chat_template is not Qwen2.5's ChatML template, the only one implemented" ]
	run --separate-stderr -1 tok chat <<<'[{"role":"user","content":1}]'
	[ "$stderr" = "tok: <stdin>: messages[0]: content is not a string or an array of text parts" ]
	run --separate-stderr -1 tok chat <<<'[{"role":"robot","content":"x"}]'
	[ "$stderr" = "tok: <stdin>: messages[0]: role must be system (or developer), user, assistant or tool" ]
	run --separate-stderr -1 tok chat <<<'[]'
	[ "$stderr" = "tok: <stdin>: no messages" ]
	run --separate-stderr -1 tok chat <<<'[{"role":"assistant","content":"","tool_calls":[{"name":"f"}]}]'
	[ "$stderr" = "tok: <stdin>: messages[0]: tool_calls are not supported" ]
}

@test "misuse exits 2 with one line and the usage" {
	run --separate-stderr -2 tok
	[ "${stderr%%$'\n'*}" = "tok: missing command (encode, decode or chat)" ]
	run --separate-stderr -2 tok frobnicate
	[ "${stderr%%$'\n'*}" = "tok: unknown command 'frobnicate' (encode, decode or chat)" ]
	run --separate-stderr -2 tok decode --pieces
	[ "${stderr%%$'\n'*}" = "tok: --pieces: unknown option for tok decode" ]
	run --separate-stderr -2 tok chat --no-special
	[ "${stderr%%$'\n'*}" = "tok: --no-special: unknown option for tok chat" ]
	run --separate-stderr -2 tok encode --count --json
	[ "${stderr%%$'\n'*}" = "tok: --json: only one of --pieces, --count, --json, --text" ]
	run --separate-stderr -2 tok encode --tokenizer
	[ "${stderr%%$'\n'*}" = "tok: --tokenizer: missing value" ]
	[[ "$stderr" == *"usage: tok encode"* ]]
	run -0 tok --help
	[[ "$output" == "usage: tok encode"* ]]
}

@test "a missing input file is an error naming it" {
	run --separate-stderr -1 tok encode /nonexistent/x
	[ "$stderr" = "tok: /nonexistent/x: No such file or directory" ]
}

@test "a reader that goes away ends tok quietly" {
	run -0 bash -c "set -o pipefail; tok encode < '$TINY/train.txt' | head -1; echo \"\${PIPESTATUS[0]}\""
	[ "${lines[0]}" = 5338 ]
	[[ "${lines[1]}" = 0 || "${lines[1]}" = 141 ]]
}

@test "the default tokenizer is found where make install puts it, and its absence is one clear error" {
	P="$BATS_TEST_TMPDIR/prefix"
	mkdir -p "$P/bin" "$P/share/qwenpipe/qwen2.5-0.5b-instruct"
	cp "$BIN/tok" "$P/bin/"
	cp "$Q/tokenizer.json" "$Q/tokenizer_config.json" "$P/share/qwenpipe/qwen2.5-0.5b-instruct/"
	cd /
	run -0 bash -c "printf hi | '$P/bin/tok' encode"
	[ "$output" = 6023 ]
	run -0 "$P/bin/tok" chat --user Hello --count
	[ "$output" = 30 ]
	rm -r "$P/share"
	run --separate-stderr -1 bash -c "printf hi | '$P/bin/tok' encode"
	[ "$stderr" = "$(printf '%s\n%s' "tok: the bundled tokenizer (data/qwen2.5-0.5b-instruct/tokenizer.json) is not next to this executable" "hint: give one with --tokenizer PATH or QWENPIPE_TOKENIZER=PATH")" ]
}

@test "decode --stop: the text up to the first stop string, then exit, closing the input" {
	ids=$(printf 'Hello world, foo bar baz' | tok encode | tr '\n' ' ')
	run -0 bash -c "echo '$ids' | tok decode --stop 'o b' --stop ', f'"
	assert_output "Hello world"
	run -0 bash -c "echo '$ids' | tok decode --stop zzz"
	assert_output "Hello world, foo bar baz"
	# A stop string split across tokens, and a text that only begins one.
	run -0 bash -c "echo '$ids' | tok decode --stop 'ar b'"
	assert_output "Hello world, foo b"
	run -0 bash -c "echo '$ids' | tok decode --stop 'bazz'"
	assert_output "Hello world, foo bar baz"
	# It stops reading: what comes after the stop is not read at all (the
	# input stays open 30 s; tok is done long before, and the test does
	# not wait for the writer).
	run -0 bash -c "timeout 10 tok decode --stop foo < <(echo '$ids'; exec sleep 30 2>/dev/null 3>&-)"
	assert_output "Hello world, "
	run -2 tok decode --stop ''
	assert_line --index 0 "tok: --stop: the text is empty"
}

@test "decode on a terminal ends the text with a newline" {
	run -0 script -qec "echo 9707 | '$BIN/tok' decode" /dev/null
	assert_output $'Hello\r'
	run -0 bash -c "echo 9707 | tok decode | od -An -c"
	assert_output "   H   e   l   l   o"
}
