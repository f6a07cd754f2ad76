#!/usr/bin/env bats
# serve: the OpenAI HTTP API, on a free port of 127.0.0.1, with curl and a
# standard client. The answers are checked against the pipeline itself
# (scripts/generate, tok | forward | sample): the same ids, the same text.
# Every server is ended in teardown, and every curl has a time limit.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
	GEN="$ROOT/scripts/generate"
}

teardown() {
	if [ -n "${SERVE_PID-}" ]; then
		kill "$SERVE_PID" 2>/dev/null || true
		wait "$SERVE_PID" 2>/dev/null || true
	fi
}

# start_serve [FLAGS...]: serve the tiny model on a free port; sets URL.
start_serve() {
	: > "$BATS_TEST_TMPDIR/serve.err"
	serve "$TINY" --port 0 "$@" 2>"$BATS_TEST_TMPDIR/serve.err" 3>&- &
	SERVE_PID=$!
	local port= i
	for i in $(seq 200); do
		port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$BATS_TEST_TMPDIR/serve.err")
		[ -n "$port" ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$BATS_TEST_TMPDIR/serve.err" >&2; return 1; }
	URL=http://127.0.0.1:$port
}

# post PATH JSON: the body of the answer; st then says its HTTP status.
post() {
	local out=$BATS_TEST_TMPDIR/body
	curl -s --max-time 30 -o "$out" -w '%{http_code}' "$URL$1" \
		-H 'Content-Type: application/json' --data-binary "$2" > "$BATS_TEST_TMPDIR/status"
	cat "$out"
}
st() { cat "$BATS_TEST_TMPDIR/status"; }

# The text of a streamed answer: the deltas (or texts) joined.
sse_text() { sed -n 's/^data: \({.*\)/\1/p' | jq -j '.choices[0] | (.delta.content // .text // "")'; }

chat_body() { # chat_body MESSAGE SEED N [MORE JSON]
	jq -nc --arg m "$1" --argjson s "$2" --argjson n "$3" --argjson x "${4:-{\}}" \
		'{messages: [{role: "user", content: $m}], seed: $s, max_tokens: $n} + $x'
}

@test "serve: --help, --version, --options, and a usage error" {
	run -0 serve --help
	assert_line --index 0 --partial "usage: serve MODEL"
	run -0 serve --version
	run -0 serve --options
	assert_line --partial $'--parallel\tvalue'
	run -2 serve
	assert_line --index 0 "serve: expected a model"
	run -2 serve "$TINY" --port 70000
	assert_line --index 0 "serve: --port: 70000 is out of range [0, 65535]"
	run -2 serve "$TINY" --host localhost
	assert_line --index 0 "serve: --host: 'localhost' is not an IPv4 or IPv6 address"
	run -2 serve "$TINY" --alias ''
	assert_line --index 0 "serve: --alias: the model's name is empty"
	run -1 serve "$BATS_TEST_TMPDIR/none"
	[ "${#lines[@]}" -ge 1 ]
}

@test "serve: /health, /v1/models, 404, 405" {
	start_serve
	run -0 curl -s --max-time 10 "$URL/health"
	assert_output '{"status":"ok","slots_idle":1,"slots_processing":0,"requests_waiting":0}'
	run -0 curl -s --max-time 10 "$URL/v1/models"
	[ "$(jq -r '.object, .data[0].id, .data[0].object' <<<"$output")" = $'list\nshakespeare-tiny\nmodel' ]
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/v1/nothing"
	assert_output 404
	run -0 curl -s --max-time 10 -D - -o /dev/null "$URL/v1/chat/completions"
	assert_line --index 0 --regexp '^HTTP/1.1 405'
	assert_line $'Allow: POST, OPTIONS\r'
	run -0 curl -s --max-time 10 -D - -o /dev/null -X DELETE "$URL/v1/models"
	assert_line --index 0 --regexp '^HTTP/1.1 405'
	assert_line $'Allow: GET, HEAD, OPTIONS\r'
	# HEAD is GET without the body
	run -0 curl -s --max-time 10 -I "$URL/health"
	assert_line --index 0 --regexp '^HTTP/1.1 200'
	# llama-server's paths without /v1 are the same endpoints
	run -0 curl -s --max-time 10 "$URL/models"
	[ "$(jq -r '.data[0].id' <<<"$output")" = shakespeare-tiny ]
	run -0 curl -s --max-time 10 "$URL/v1/health"
	[ "$(jq -r .status <<<"$output")" = ok ]
	run -0 curl -s --max-time 30 "$URL/completions" -d '{"prompt": "To be", "max_tokens": 2}'
	[ "$(jq -r .usage.completion_tokens <<<"$output")" = 2 ]
	# a second server on the port: one line, before any slot starts (so
	# before its model, here none, is looked at)
	run -1 --separate-stderr serve "$BATS_TEST_TMPDIR/none" --port "${URL##*:}"
	[ "$stderr" = "serve: cannot listen on 127.0.0.1 port ${URL##*:}: Address already in use" ]
	# one model by its id, as OpenAI's GET /v1/models/{model}
	run -0 curl -s --max-time 10 "$URL/v1/models/shakespeare-tiny"
	[ "$(jq -r '.id, .object' <<<"$output")" = $'shakespeare-tiny\nmodel' ]
	run -0 curl -s --max-time 10 -w ' %{http_code}' "$URL/v1/models/gpt-4"
	assert_output '{"error":{"message":"no model '"'gpt-4'"' here (this server'"'"'s is '"'shakespeare-tiny'"')","type":"invalid_request_error","param":"model","code":null}} 404'
	# GETs keep the connection open: the second and third reuse the first's
	run -0 curl -s --max-time 10 -o /dev/null -o /dev/null -o /dev/null -w '%{num_connects}\n' "$URL/health" "$URL/v1/models" "$URL/health"
	assert_output $'1\n0\n0'
}

@test "serve: a page from another origin may call it (CORS), as llama-server's" {
	start_serve --api-key k
	# the preflight: no key needed, the methods and the headers asked for
	run -0 curl -s --max-time 10 -D - -o /dev/null -X OPTIONS "$URL/v1/chat/completions" \
		-H 'Origin: http://example.org' -H 'Access-Control-Request-Method: POST' \
		-H 'Access-Control-Request-Headers: authorization,content-type'
	assert_line --index 0 --regexp '^HTTP/1.1 204'
	assert_line $'Access-Control-Allow-Origin: *\r'
	assert_line $'Access-Control-Allow-Headers: authorization,content-type\r'
	assert_line --regexp '^Access-Control-Allow-Methods: .*POST'
	# answers, errors and streams carry the origin header; the key is still needed
	for body in '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}' \
		    '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "stream": true}'; do
		run -0 curl -s --max-time 30 -D - -o /dev/null -H 'Origin: http://example.org' \
			-H 'Authorization: Bearer k' "$URL/v1/chat/completions" -d "$body"
		assert_line --index 0 --regexp '^HTTP/1.1 200'
		assert_line $'Access-Control-Allow-Origin: *\r'
	done
	run -0 curl -s --max-time 10 -D - -o /dev/null -H 'Origin: http://example.org' "$URL/v1/models"
	assert_line --index 0 --regexp '^HTTP/1.1 401'
	assert_line $'Access-Control-Allow-Origin: *\r'
}

@test "serve: a chat is scripts/generate --chat's text with the same seed and settings, streamed or not" {
	start_serve
	d=$BATS_TEST_TMPDIR
	"$GEN" --chat "$TINY" "Who art thou?" --seed 3 -n 24 --temp 0.9 --top-k 30 > "$d/want"
	tok chat --user "Who art thou?" | forward "$TINY" | sample --seed 3 -n 24 --temp 0.9 --top-k 30 > "$d/ids"
	run -0 post /v1/chat/completions "$(chat_body "Who art thou?" 3 24 '{"temperature": 0.9, "top_k": 30}')"
	[ "$(st)" = 200 ]
	[ "$(jq -j '.choices[0].message.content' <<<"$output")" = "$(cat "$d/want")" ]
	[ "$(jq -r .usage.completion_tokens <<<"$output")" = "$(wc -l < "$d/ids")" ]
	[ "$(jq -r .usage.prompt_tokens <<<"$output")" = "$(tok chat --user "Who art thou?" --count)" ]
	# streamed: one chunk per token, each with that token's bytes
	run -0 post /v1/chat/completions "$(chat_body "Who art thou?" 3 24 '{"temperature": 0.9, "top_k": 30, "stream": true, "logprobs": true}')"
	[ "$(st)" = 200 ]
	[ "$(sse_text <<<"$output")" = "$(cat "$d/want")" ]
	[ "${lines[-1]}" = "data: [DONE]" ]
	sed -n 's/^data: \({.*\)/\1/p' <<<"$output" | jq -c '.choices[0].logprobs.content[0].bytes // empty' > "$d/bytes"
	[ "$(wc -l < "$d/bytes")" = "$(wc -l < "$d/ids")" ]
	# the first 8 tokens' bytes, each decoded alone by tok
	head -n 8 "$d/ids" | while read -r id; do echo "$id" | tok decode | od -An -tu1 | jq -sc .; done > "$d/want-bytes"
	run -0 diff "$d/want-bytes" <(head -n 8 "$d/bytes")
}

@test "serve: content as OpenAI's text parts is their texts joined by newlines" {
	start_serve
	d=$BATS_TEST_TMPDIR
	"$GEN" --chat "$TINY" $'Who art\nthou?' --seed 3 -n 12 > "$d/want"
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": [{"type": "text", "text": "Who art"}, {"type": "text", "text": "thou?"}]}], "seed": 3, "max_tokens": 12}'
	[ "$(st)" = 200 ]
	[ "$(jq -j '.choices[0].message.content' <<<"$output")" = "$(cat "$d/want")" ]
	[ "$(jq -r .usage.prompt_tokens <<<"$output")" = "$(tok chat --user $'Who art\nthou?' --count)" ]
}

@test "serve: /v1/completions is scripts/generate's text; logprobs match sample --logprobs" {
	start_serve
	d=$BATS_TEST_TMPDIR
	"$GEN" "$TINY" "ROMEO:" --seed 5 -n 16 > "$d/want"
	printf 'ROMEO:' | tok encode | forward "$TINY" | sample --seed 5 -n 16 --logprobs 2 --logprobs-file "$d/lp" > /dev/null
	run -0 post /v1/completions '{"prompt": "ROMEO:", "seed": 5, "max_tokens": 16, "logprobs": 2}'
	[ "$(st)" = 200 ]
	[ "$(jq -j '.choices[0].text' <<<"$output")" = "$(cat "$d/want")" ]
	# the same log-probabilities as sample's (both float32, as JSON numbers)
	jq -c '.choices[0].logprobs.token_logprobs[]' <<<"$output" > "$d/got"
	jq -c '.logprob' "$d/lp" > "$d/exp"
	[ "$(wc -l < "$d/got")" = 16 ]
	run -0 awk 'NR == FNR { a[NR] = $1; next } { d = a[FNR] - $1; if (d < 0) d = -d; if (d > 1e-6) { print FNR ": " a[FNR] " " $1; bad = 1 } } END { exit bad }' "$d/got" "$d/exp"
	# the prompt as token ids, as llama-server and OpenAI take it
	ids=$(printf 'ROMEO:' | tok encode | jq -sc .)
	run -0 post /v1/completions "{\"prompt\": $ids, \"seed\": 5, \"max_tokens\": 16}"
	[ "$(st)" = 200 ]
	[ "$(jq -j '.choices[0].text' <<<"$output")" = "$(cat "$d/want")" ]
	run -0 post /v1/completions '{"prompt": [3361, 151665], "max_tokens": 2}'
	[ "$(st)" = 400 ]
	[ "$(jq -r .error.message <<<"$output")" = "prompt[1]: 151665 is not a token id (0 to 151664)" ]
}

@test "serve: a conversation's next turn computes only its new positions, and answers as a fresh pipeline" {
	start_serve
	d=$BATS_TEST_TMPDIR
	run -0 post /v1/chat/completions "$(chat_body "Who art thou?" 1 12 '{"ignore_eos": true}')"
	a1=$(jq -j '.choices[0].message.content' <<<"$output")
	tok chat --user "Who art thou?" > "$d/p1"
	forward "$TINY" < "$d/p1" | sample --seed 1 -n 12 --ignore-eos > "$d/a1"
	# the slot holds the prompt and the 11 tokens fed back (not the 12th)
	cat "$d/p1" <(head -n 11 "$d/a1") > "$d/held"
	conv=$(jq -nc --arg a "$a1" '[{role: "user", content: "Who art thou?"}, {role: "assistant", content: $a},
		{role: "user", content: "Whence comest thou?"}]')
	tok chat <<<"$conv" > "$d/p2"
	keep=$(paste -d' ' "$d/held" <(head -n "$(wc -l < "$d/held")" "$d/p2") | awk '$1 != $2 { print NR - 1; f = 1; exit } END { if (!f) print NR }')
	run -0 post /v1/chat/completions "$(jq -nc --argjson m "$conv" '{messages: $m, seed: 2, max_tokens: 10, ignore_eos: true}')"
	n2=$(wc -l < "$d/p2")
	[ "$keep" -gt 30 ]
	[ "$(jq -r .usage.prompt_tokens_details.cached_tokens <<<"$output")" = "$keep" ]
	[ "$(jq -r .usage.positions_computed <<<"$output")" = "$((n2 - keep + 9))" ]
	forward "$TINY" < "$d/p2" | sample --seed 2 -n 10 --ignore-eos | tok decode > "$d/want2"
	[ "$(jq -j '.choices[0].message.content' <<<"$output")" = "$(cat "$d/want2")" ]
}

@test "serve: stop strings end the text before them, as generate --stop" {
	start_serve
	want=$("$GEN" "$TINY" "ROMEO:" --seed 1 -n 100 --stop "JULIET" --stop "you")
	run -0 post /v1/completions '{"prompt": "ROMEO:", "seed": 1, "max_tokens": 100, "stop": ["JULIET", "you"]}'
	[ "$(jq -j '.choices[0].text' <<<"$output")" = "$want" ]
	[ "$(jq -r '.choices[0].finish_reason' <<<"$output")" = stop ]
	run -0 post /v1/completions '{"prompt": "ROMEO:", "seed": 1, "max_tokens": 100, "stop": "you", "stream": true}'
	[ "$(sse_text <<<"$output")" = "$("$GEN" "$TINY" "ROMEO:" --seed 1 -n 100 --stop you)" ]
}

@test "serve: the bad-request catalogue, each with its status and the field named" {
	start_serve --max-body 4096 --max-messages 4 --tokens-limit 64 --ctx 64
	ok='{"role": "user", "content": "Hi"}'
	while IFS="|" read -r want param body; do
		run -0 post /v1/chat/completions "$body"
		[ "$(st)" = "$want" ] || { echo "$body: $(st), not $want: $output"; false; }
		[ "$(jq -r '.error.param // ""' <<<"$output")" = "$param" ] || { echo "$body: $output"; false; }
		[ "$want" = 200 ] || [ "$(jq -r '.error.type' <<<"$output")" = invalid_request_error ]
	done <<EOF2
400||{"messages": [$ok]
400||[1, 2]
400||{"messages": [$ok], "messages": [$ok]}
400|messages|{"messages": []}
400|messages|{"messages": "Hi"}
400|messages|{"messages": [{"role": "robot", "content": "Hi"}]}
400|messages|{"messages": [{"role": "user", "content": 5}]}
400|messages|{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}
400|messages|{"messages": [$ok, $ok, $ok, $ok, $ok]}
400|messages|{"prompt": "Hi"}
400|temperature|{"messages": [$ok], "temperature": "hot"}
400|temperature|{"messages": [$ok], "temperature": -1}
400|top_p|{"messages": [$ok], "top_p": 1.5}
400|top_k|{"messages": [$ok], "top_k": 2.5}
400|min_p|{"messages": [$ok], "min_p": true}
400|repeat_penalty|{"messages": [$ok], "repeat_penalty": 0}
400|seed|{"messages": [$ok], "seed": -2}
400|seed|{"messages": [$ok], "seed": 9223372036854775808}
400|n_predict|{"messages": [$ok], "n_predict": -2}
400|logit_bias|{"messages": [$ok], "logit_bias": {"198": -100}}
400|grammar|{"messages": [$ok], "grammar": "root ::= \"a\""}
400|json_schema|{"messages": [$ok], "json_schema": {}}
400|mirostat|{"messages": [$ok], "mirostat": 2}
400|typical_p|{"messages": [$ok], "typical_p": 0.5}
400|modalities|{"messages": [$ok], "modalities": ["text", "audio"]}
400|max_tokens|{"messages": [$ok], "max_tokens": 65}
400|max_tokens|{"messages": [$ok], "max_tokens": "10"}
400|stream|{"messages": [$ok], "stream": "yes"}
400|stop|{"messages": [$ok], "stop": 5}
400|stop|{"messages": [$ok], "stop": ["a", 1]}
400|logprobs|{"messages": [$ok], "logprobs": 1}
400|top_logprobs|{"messages": [$ok], "logprobs": true, "top_logprobs": 21}
400|top_logprobs|{"messages": [$ok], "top_logprobs": 2}
400|tools|{"messages": [$ok], "tools": [{"type": "function", "function": {"name": "f"}}]}
400|tool_choice|{"messages": [$ok], "tool_choice": "auto"}
400|messages|{"messages": [{"role": "assistant", "content": "x", "tool_calls": [{"id": "1"}]}]}
400|n|{"messages": [$ok], "n": 2}
400|frequency_penalty|{"messages": [$ok], "frequency_penalty": 0.5}
400|presence_penalty|{"messages": [$ok], "presence_penalty": 0.5}
400|response_format|{"messages": [$ok], "response_format": {"type": "json_object"}}
400|model|{"messages": [$ok], "model": 7}
200||{"messages": [$ok], "max_tokens": 2, "unknown_field": {"x": [1]}, "user": "u", "tool_choice": "none"}
200||{"messages": [$ok], "max_tokens": 2, "seed": -1, "logit_bias": {}, "mirostat": 0, "typical_p": 1, "modalities": ["text"]}
EOF2
	# the message names the field and says what is wrong
	run -0 post /v1/chat/completions "{\"messages\": [$ok], \"temperature\": 3000}"
	[ "$(jq -r .error.message <<<"$output")" = "temperature: 3000 is out of range [0, 100]" ]
	run -0 post /v1/chat/completions "{\"messages\": [$ok], \"tools\": [{}]}"
	[ "$(jq -r .error.message <<<"$output")" = "tools: tools and function calling are not supported" ]
	for body in '{"prompt": 5}' '{"prompt": []}' '{"prompt": ["a", "b"]}' '{"prompt": [1, -2]}' '{"prompt": [1.5]}'; do
		run -0 post /v1/completions "$body"
		[ "$(st)" = 400 ] && [ "$(jq -r .error.param <<<"$output")" = prompt ]
	done
	# bytes that are not UTF-8
	run -0 post /v1/chat/completions $'{"messages": [{"role": "user", "content": "\xff"}]}'
	[ "$(st)" = 400 ]
	# a body over --max-body: 413, declared or not
	big=$(head -c 5000 /dev/zero | tr '\0' a)
	run -0 post /v1/chat/completions "{\"x\": \"$big\"}"
	[ "$(st)" = 413 ]
	# sent in chunks, without a length: the connection is closed once the
	# body passes the limit (curl: 52, an empty reply)
	run -52 bash -c "printf '%s' '{\"x\": \"$big\"}' | curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' --data-binary @- '$URL/v1/completions'"
	assert_output 000
	# a prompt longer than the context
	long=$(head -c 1500 /dev/zero | tr '\0' a | sed 's/a/a /g')
	run -0 post /v1/completions "{\"prompt\": \"$long\"}"
	[ "$(st)" = 400 ]
	[ "$(jq -r .error.message <<<"$output")" = "the prompt is $(printf '%s' "$long" | tok encode --count) tokens; the context holds 64 (serve --ctx), with room for at least one more" ]
	[ "$(jq -r .error.code <<<"$output")" = context_length_exceeded ]
	# the server is still answering
	run -0 post /v1/chat/completions "{\"messages\": [$ok], \"max_tokens\": 2}"
	[ "$(st)" = 200 ]
}

@test "serve: --api-key: 401 without it or with another, constant-time compare; /health stays open" {
	echo "s3cret" > "$BATS_TEST_TMPDIR/key"
	start_serve --api-key-file "$BATS_TEST_TMPDIR/key"
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/v1/models"
	assert_output 401
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cre' "$URL/v1/models"
	assert_output 401
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret!' "$URL/v1/models"
	assert_output 401
	run -0 curl -s --max-time 10 "$URL/v1/models" -H 'Authorization: Bearer s3cret'
	[ "$(jq -r .object <<<"$output")" = list ]
	# the scheme's name has no case (RFC 9110); the key has
	run -0 curl -s --max-time 10 "$URL/models" -H 'Authorization: bearer s3cret'
	[ "$(jq -r .object <<<"$output")" = list ]
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer S3CRET' "$URL/v1/models"
	assert_output 401
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/models"
	assert_output 401
	run -0 curl -s --max-time 10 -H 'Authorization: Bearer nope' "$URL/v1/chat/completions" -d '{}'
	[ "$(jq -r .error.type <<<"$output")" = authentication_error ]
	run -0 curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/health"
	assert_output 200
	run -2 serve "$TINY" --api-key a --api-key-file "$BATS_TEST_TMPDIR/key"
	assert_line --index 0 "serve: --api-key and --api-key-file: give one"
}

# health FIELD: a number from /health
health() { curl -s --max-time 10 "$URL/health" | jq -r ".$1"; }
# wait_health FIELD VALUE: polls /health (at most 400 times) until it says so
wait_health() {
	local i
	for i in $(seq 400); do
		[ "$(health "$1")" = "$2" ] && return 0
		sleep 0.025
	done
	echo "/health: $1 is $(health "$1"), not $2" >&2
	return 1
}

@test "serve: a full queue is 503 with Retry-After; a client gone mid-stream frees its slot at once" {
	start_serve --parallel 1 --queue 1 -c 4096
	d=$BATS_TEST_TMPDIR
	long=$(chat_body "Hi" 1 4000 '{"stream": true, "ignore_eos": true}')
	curl -sN --max-time 60 "$URL/v1/chat/completions" -d "$long" > "$d/a" 3>&- &
	a=$!
	wait_health slots_processing 1
	curl -s --max-time 60 "$URL/v1/chat/completions" -d "$(chat_body Hi 2 2)" > "$d/b" 3>&- &
	b=$!
	wait_health requests_waiting 1
	run -0 curl -s --max-time 10 -D "$d/h" "$URL/v1/chat/completions" -d "$(chat_body Hi 3 2)"
	[ "$(jq -r .error.type <<<"$output")" = server_error ]
	run -0 grep -i '^HTTP/1.1 503' "$d/h"
	run -0 grep -i '^Retry-After: 1' "$d/h"
	# the first client goes away: the waiting request gets the slot
	kill "$a"
	wait "$a" || true
	wait "$b"
	[ "$(jq -r .choices[0].finish_reason "$d/b")" = length ]
	[ "$(health slots_processing)" = 0 ]
	# the abandoned stream stopped where it was, far before its 4000 tokens
	run -0 grep -c '^data: {' "$d/a"
	[ "$output" -gt 1 ] && [ "$output" -lt 4000 ]
}

@test "serve: a client that leaves while it waits gives its place up; an answer not streamed stops when its client leaves" {
	start_serve --parallel 1 --queue 1 -c 32768 --tokens-limit 30000 -v
	d=$BATS_TEST_TMPDIR
	long=$(chat_body "Hi" 1 30000 '{"ignore_eos": true}')
	curl -s --max-time 60 "$URL/v1/chat/completions" -d "$long" > /dev/null 3>&- &
	a=$!
	wait_health slots_processing 1
	# a client that gives up while queued (curl's own time limit) is no
	# longer counted, and the next request may wait in its place
	run -28 curl -s --max-time 0.5 "$URL/v1/chat/completions" -d "$long"
	wait_health requests_waiting 0
	curl -s --max-time 60 "$URL/v1/chat/completions" -d "$(chat_body Hi 2 2)" > "$d/b" 3>&- &
	b=$!
	wait_health requests_waiting 1
	# the first client leaves: its answer, not streamed, stops there and
	# the slot goes to the waiting request
	kill "$a"
	wait "$a" || true
	wait "$b"
	[ "$(jq -r .choices[0].finish_reason "$d/b")" = length ]
	run -0 grep -c 'a client left while its request waited' "$d/serve.err"
	assert_output 1
	n=$(sed -n 's/.*the client left; stopped after \([0-9]*\) tokens/\1/p' "$d/serve.err")
	[ -n "$n" ] && [ "$n" -lt 30000 ]
}

@test "serve: OpenAI's developer message is a system message; llama-server's n_predict is max_tokens" {
	start_serve
	sys=$(post /v1/chat/completions '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "seed": 4, "max_tokens": 8}')
	dev=$(post /v1/chat/completions '{"messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "seed": 4, "max_tokens": 8}')
	[ "$(st)" = 200 ]
	[ "$(jq -c '[.choices[0].message.content, .usage.prompt_tokens]' <<<"$dev")" = "$(jq -c '[.choices[0].message.content, .usage.prompt_tokens]' <<<"$sys")" ]
	[ "$(jq -r .usage.prompt_tokens <<<"$dev")" = "$(tok chat --system "Be brief." --user Hi --count)" ]
	run -0 post /v1/completions '{"prompt": "To be", "n_predict": 3, "max_tokens": 9}'
	[ "$(jq -r .usage.completion_tokens <<<"$output")" = 3 ]
}

@test "serve: a client that stalls in its headers or body is cut off after --timeout" {
	start_serve --timeout 1
	port=${URL##*:}
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"pro' >&5
	# the server closes the connection: read meets the end, not its own limit
	st=0
	IFS= read -r -t 20 line <&5 || st=$?
	exec 5<&-
	[ "$st" = 1 ]
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	printf 'GET /health HTTP/1.1\r\nHo' >&5
	st=0
	IFS= read -r -t 20 line <&5 || st=$?
	exec 5<&-
	[ "$st" = 1 ]
	[ "$(health slots_idle)" = 1 ]
}

@test "serve: 8 concurrent streaming clients, 200 requests: every answer whole, none mixed" {
	start_serve --parallel 4 --queue 16
	d=$BATS_TEST_TMPDIR
	for c in 1 2 3 4 5 6 7 8; do
		"$GEN" --chat "$TINY" "Speak, client $c" --seed "$c" -n 6 > "$d/want$c"
	done
	client() {
		local c=$1 i body
		body=$(chat_body "Speak, client $c" "$c" 6 '{"stream": true}')
		for i in $(seq 25); do
			curl -sN --max-time 30 "$URL/v1/chat/completions" -d "$body" > "$d/got.$c.$i" ||
				echo "$c.$i: curl $?"
		done
	}
	pids=()
	for c in 1 2 3 4 5 6 7 8; do client "$c" > "$d/err$c" 3>&- & pids+=($!); done
	for p in "${pids[@]}"; do wait "$p"; done
	run -0 cat "$d"/err*
	assert_output ""
	# each of the 200 answers ends with [DONE], has one id, and is its
	# client's text; one jq over them all: "FILE TAB ids TAB text" lines
	run -1 bash -c "grep -c '^data: \[DONE\]\$' '$d'/got.* | grep -vc ':1\$'"
	assert_output 0
	jq -Rn --rawfile w1 "$d/want1" --rawfile w2 "$d/want2" --rawfile w3 "$d/want3" \
		--rawfile w4 "$d/want4" --rawfile w5 "$d/want5" --rawfile w6 "$d/want6" \
		--rawfile w7 "$d/want7" --rawfile w8 "$d/want8" '
		[$w1, $w2, $w3, $w4, $w5, $w6, $w7, $w8] as $want
		| [inputs | select(startswith("data: {")) | {f: input_filename} + (.[6:] | fromjson)]
		| group_by(.f)[]
		| (.[0].f | capture("got\\.(?<c>[0-9])\\.") | .c | tonumber) as $c
		| select((map(.id) | unique | length) != 1
			 or (map(.choices[0].delta.content // "") | add) != $want[$c - 1])
		| .[0].f' "$d"/got.* > "$d/bad"
	run -0 cat "$d/bad"
	assert_output ""
	run -0 bash -c "ls '$d'/got.* | wc -l"
	assert_output 200
	[ "$(health slots_processing)" = 0 ]
	kill -0 "$SERVE_PID"
}

@test "serve: the openai npm client streams a chat whose tokens are scripts/generate --chat's" {
	[ -d "$ROOT/tests/openai/node_modules/openai" ] ||
		skip "the openai client is not installed (tests/openai/node_modules); run: cd tests/openai && npm ci"
	start_serve
	d=$BATS_TEST_TMPDIR
	tok chat --user "Good morrow" | forward "$TINY" | sample --seed 11 -n 20 > "$d/ids"
	run -0 node "$ROOT/tests/openai/stream.js" "$URL/v1" "Good morrow" 11 20
	assert_line --index -1 --regexp '^finish: (stop|length)$'
	# one chunk per token: each chunk's text is its token's
	printf '%s\n' "${lines[@]:0:${#lines[@]}-1}" | jq -j . > "$d/text"
	chunks=$(( ${#lines[@]} - 1 ))
	"$GEN" --chat "$TINY" "Good morrow" --seed 11 -n 20 > "$d/want"
	run -0 cmp "$d/want" "$d/text"
	[ "$chunks" = "$(wc -l < "$d/ids")" ]
}

@test "serve: the openai npm client lists and retrieves the model" {
	[ -d "$ROOT/tests/openai/node_modules/openai" ] ||
		skip "the openai client is not installed (tests/openai/node_modules); run: cd tests/openai && npm ci"
	start_serve
	run -0 node "$ROOT/tests/openai/models.js" "$URL/v1"
	assert_output $'listed: shakespeare-tiny\nretrieved: shakespeare-tiny model\nmissing: 404'
}

@test "serve: SIGTERM ends it and its forwards, also with a request in flight and one waiting" {
	start_serve --parallel 1
	kids=$(pgrep -P "$SERVE_PID")
	[ "$(wc -w <<<"$kids")" = 1 ]
	curl -sN --max-time 60 "$URL/v1/completions" -d '{"prompt": "A", "max_tokens": 4000, "ignore_eos": true, "stream": true}' > /dev/null 3>&- &
	wait_health slots_processing 1
	curl -s --max-time 60 "$URL/v1/completions" -d '{"prompt": "B", "max_tokens": 1}' > /dev/null 3>&- &
	wait_health requests_waiting 1
	kill -TERM "$SERVE_PID"
	st=0
	wait "$SERVE_PID" || st=$?
	SERVE_PID=
	[ "$st" = 143 ]
	run -1 kill -0 $kids
	tmpdir_empty
}
