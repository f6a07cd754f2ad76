/* tok: text to Qwen2.5 token ids and back, and chat rendering.
 *
 *   tok encode [FILE...]   text (stdin, or each FILE; - is stdin) -> one id per line
 *   tok decode [FILE...]   ids separated by any whitespace -> text, streamed
 *                          (--stop TEXT: up to the first TEXT, then exit)
 *   tok chat               messages (JSON on stdin, or --system/--user) -> ids
 *
 * The tokenizer: --tokenizer PATH (a tokenizer.json, a model directory, or
 * a GGUF file: its tokenizer.ggml.* arrays and chat template, or a
 * container, whose embedded copy is read), else $QWENPIPE_TOKENIZER, else
 * the bundled
 * data/qwen2.5-0.5b-instruct/tokenizer.json, found from where the tok
 * executable is (see default_tokenizer), so it works from anywhere.
 */
#define _GNU_SOURCE  /* memmem */
#include "text/chat.h"
#include "cli/cli.h"
#include "format/config.h"
#include "format/gguf.h"
#include "format/gguf_arch.h"
#include "format/modelfile.h"
#include "cli/datadir.h"
#include "core/path.h"
#include "core/slurp.h"
#include "text/stoptext.h"
#include "text/tokenizer.h"
#include "text/tokmodel.h"
#include "format/qfile.h"
#include "core/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_TOKENIZER = CLI_LONG, OPT_NO_SPECIAL, OPT_SKIP_SPECIAL, OPT_PIECES,
       OPT_COUNT, OPT_JSON, OPT_TEXT, OPT_SYSTEM, OPT_USER, OPT_NO_GEN_PROMPT,
       OPT_STOP };

static const struct cli_opt opts[] = {
	{ 0, "FILE", NULL, "encode, decode: the input ('-' or none: stdin)" },
	{ OPT_TOKENIZER, "tokenizer", "PATH", "a tokenizer.json, a model directory, a GGUF\n"
	  "file or a container (its embedded copy; default:\n"
	  "$QWENPIPE_TOKENIZER, else the bundled Qwen2.5 one)" },
	{ OPT_NO_SPECIAL, "no-special", NULL, "encode: special tokens in the text are plain text" },
	{ OPT_SKIP_SPECIAL, "skip-special", NULL, "decode: leave special tokens out of the text" },
	{ OPT_STOP, "stop", "TEXT", "decode: end before the first TEXT, and exit (which\n"
	  "closes the input: a pipeline upstream ends); repeatable" },
	{ OPT_PIECES, "pieces", NULL, "encode, chat: each token as id and its text" },
	{ OPT_COUNT, "count", NULL, "encode, chat: only the number of tokens" },
	{ OPT_JSON, "json", NULL, "encode, chat: the ids as one JSON array" },
	{ OPT_TEXT, "text", NULL, "chat: the rendered template as text, not ids" },
	{ OPT_SYSTEM, "system", "TEXT", "chat: the system message" },
	{ OPT_USER, "user", "TEXT", "chat: one user message (instead of JSON on stdin)" },
	{ OPT_NO_GEN_PROMPT, "no-generation-prompt", NULL,
	  "chat: end after the last message, without the\n"
	  "assistant turn's opening" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "tok",
	.usage = "tok encode [--no-special] [--pieces|--count|--json] [FILE...]\n"
		 "tok decode [--skip-special] [--stop TEXT]... [FILE...]\n"
		 "tok chat [--system TEXT] [--user TEXT] [--no-generation-prompt] "
		 "[--text|--pieces|--count|--json]",
	.about = "Text to Qwen2.5 token ids and back (encode: one id per line; decode:\n"
		 "ids separated by any whitespace, text streamed), and chat rendering\n"
		 "(messages as JSON on stdin, or --system/--user, to ids). Each command\n"
		 "takes --tokenizer PATH.\n",
	.opts = opts,
};

#define ENV_TOKENIZER "QWENPIPE_TOKENIZER"
#define BUNDLED "qwen2.5-0.5b-instruct/tokenizer.json"

enum out_mode { OUT_IDS, OUT_PIECES, OUT_COUNT, OUT_JSON, OUT_TEXT };

struct opts {
	const char *cmd;
	const char *tokenizer;     /* --tokenizer; NULL: environment or bundled */
	int flags;                 /* --no-special: TOK_NO_SPECIAL */
	int skip_special;          /* decode --skip-special */
	const char **stops;        /* decode --stop, n_stops of them */
	int n_stops;
	enum out_mode out;         /* --pieces, --count, --json, (chat) --text */
	int out_set;
	const char *system, *user; /* chat --system, --user */
	int generation_prompt;     /* chat: 0 with --no-generation-prompt */
	char **files;              /* the operands */
	int n_files;
};

/* The bundled tokenizer (lib/cli/datadir.h), or NULL. */
static char *default_tokenizer(void)
{
	static char path[PATH_MAX + 64];
	return (char *)datadir_find(BUNDLED, path, sizeof path);
}

/* The chat template of the tokenizer at path must be the one we render. */
static void check_template(const char *tp)
{
	struct err e;
	if (tokmodel_check_template(tp, &e) < 0)
		cli_die_err(&e);
}

/* Where the tokenizer comes from: --tokenizer, the environment, or the
 * bundled one. */
static const char *tokenizer_path(const struct opts *o)
{
	const char *path = o->tokenizer;
	if (!path)
		path = getenv(ENV_TOKENIZER);
	if (!path || !*path)
		path = default_tokenizer();
	if (!path) {
		fprintf(stderr, "%s: the bundled tokenizer (data/%s) is not next to this executable\n"
			"hint: give one with --tokenizer PATH or %s=PATH\n", cli_prog(), BUNDLED,
			ENV_TOKENIZER);
		exit(EXIT_FAIL);
	}
	return path;
}

/* The tokenizer.json of a file, a model directory or a container (the copy
 * it embeds: lib/format/modelfile.h). */
static struct tokenizer *load(const struct opts *o)
{
	struct err e;
	struct tokenizer *t = tokmodel_load(tokenizer_path(o), &e);
	if (!t)
		cli_die_err(&e);
	return t;
}

/* Bytes as text on f (a token for --pieces, a bad id in a message):
 * printable ASCII and complete UTF-8 characters as they are; backslash,
 * \n, \r, \t escaped; every other byte (controls, a partial character) as
 * \xHH. */
static void print_piece(FILE *f, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int32_t cp;
		int len = utf8_decode(s + i, n - i, &cp);
		if (s[i] == '\\')
			fputs("\\\\", f);
		else if (s[i] == '\n')
			fputs("\\n", f);
		else if (s[i] == '\r')
			fputs("\\r", f);
		else if (s[i] == '\t')
			fputs("\\t", f);
		else if (len == 0 || cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
			fprintf(f, "\\x%02X", s[i]), len = 1;
		else
			fwrite(s + i, 1, (size_t)len, f);
		i += len > 0 ? (size_t)len : 1;
	}
}

static void write_ids(const struct tokenizer *t, const struct idvec *ids, enum out_mode out)
{
	switch (out) {
	case OUT_COUNT:
		printf("%zu\n", ids->n);
		break;
	case OUT_JSON:
		putchar('[');
		for (size_t i = 0; i < ids->n; i++)
			printf(i ? ",%d" : "%d", ids->v[i]);
		puts("]");
		break;
	case OUT_PIECES:
		for (size_t i = 0; i < ids->n; i++) {
			size_t len;
			const unsigned char *b = tok_bytes(t, ids->v[i], &len);
			printf("%d\t", ids->v[i]);
			print_piece(stdout, b, len);
			putchar('\n');
		}
		break;
	default:
		for (size_t i = 0; i < ids->n; i++)
			printf("%d\n", ids->v[i]);
		break;
	}
}

static void encode_one(struct tokenizer *t, const struct opts *o, const char *name,
		       const unsigned char *s, size_t n, int *warned)
{
	struct idvec ids = { 0 };
	struct err e;
	size_t bad;
	if (tok_encode(t, s, n, o->flags, &ids, &bad, &e) < 0)
		cli_die_err(&e);
	if (bad && !*warned) {
		cli_warn("%s: %zu byte%s not valid UTF-8, encoded as raw bytes (which "
			 "byte-level BPE merges as any others)",
			 strcmp(name, "-") ? name : "<stdin>", bad, bad == 1 ? " is" : "s are");
		*warned = 1;
	}
	write_ids(t, &ids, o->out);
	idvec_free(&ids);
}

static int cmd_encode(const struct opts *o)
{
	struct tokenizer *t = load(o);
	static char *dash[] = { "-" };
	char **files = o->n_files ? o->files : dash;
	int n = o->n_files ? o->n_files : 1, warned = 0;
	for (int i = 0; i < n; i++) {
		size_t len;
		struct err e;
		unsigned char *s = (unsigned char *)slurp(files[i], &len, &e);
		if (!s)
			cli_die_err(&e);
		encode_one(t, o, files[i], s, len, &warned);
		free(s);
	}
	tok_free(t);
	return EXIT_OK;
}

/* ---- decode's output: --stop, and the final newline on a terminal ----
 *
 * With stop strings, text that could be the start of one is held back
 * until the next bytes decide; at the first stop string, the text before
 * it is written and tok exits, which closes its input: in a pipeline the
 * sampler upstream sees its stdout closed and stops, and so does forward. */

static struct stoptext stop;
static int last_byte = -1;  /* the last byte written; -1 none */

static void put_out(const char *b, size_t n)
{
	if (n && fwrite(b, 1, n, stdout) != n)
		cli_exit(EXIT_FAIL);
	if (n)
		last_byte = (unsigned char)b[n - 1];
}

/* The end of decode's output: on a terminal, the text ends with a newline
 * so that the shell's prompt starts on a line of its own. */
static _Noreturn void decode_done(void)
{
	if (isatty(STDOUT_FILENO) && last_byte >= 0 && last_byte != '\n')
		put_out("\n", 1);
	cli_exit(EXIT_OK);
}

/* Text through the stop strings (lib/text/stoptext.h); at the first one,
 * the text before it and the end. */
static void emit_text(const unsigned char *b, size_t n, int end)
{
	struct sbuf text = { 0 };
	int stopped = stoptext_push(&stop, b, n, &text);
	if (end)
		stoptext_flush(&stop, &text);
	if (text.oom || stop.held.oom)
		cli_die("out of memory");
	put_out(text.p, text.n);
	free(text.p);
	if (stopped)
		decode_done();
}

/* The vocabulary of the model the tokenizer at path goes with: its
 * config's vocab_size (a directory's config.json, the one beside a
 * tokenizer.json, a container's embedded one, a GGUF file's), or 0 when
 * none can be read. Ids from the tokenizer's last up to it are the
 * embedding's padding rows (Qwen2.5: 151,665 to 151,935): a sampler at a
 * high temperature can draw them, and they decode to no text, as in
 * HuggingFace's decode. */
static int model_vocab(const char *path)
{
	struct err e;
	struct model_config c;
	if (gguf_sniff(path)) {
		struct gguf_file f;
		struct gen_config g;
		if (gguf_open(&f, path, &e) < 0)
			return 0;
		int ok = gguf_qwen2_config(&f, path, &c, &g, &e) == 0;
		gguf_close(&f);
		return ok ? c.vocab_size : 0;
	}
	char beside[PATH_MAX];
	const char *p = path;
	if (!path_is_dir(path) && !qfile_sniff(path)) {
		if (path_beside(beside, sizeof beside, path, "config.json", NULL) < 0)
			return 0;
		p = beside;
	}
	struct model_file f;
	if (model_file_open(&f, p, "config.json", &e) < 0)
		return 0;
	int ok = config_parse(&c, (const char *)f.data, f.size, f.name, &e) == 0;
	model_file_close(&f);
	return ok ? c.vocab_size : 0;
}

static int pad_end;  /* decode: model_vocab() of the tokenizer */

/* Decodes one id (text in tok[0..n)), writing its bytes through the
 * holder; a padding id (model_vocab) writes nothing. */
static void decode_one(const struct tokenizer *t, const struct opts *o, const char *name,
		       long line, const char *tok, size_t n, struct utf8_hold *h)
{
	long v = -1;
	if (n > 0 && n <= 10 && strspn(tok, "0123456789") == n)
		v = strtol(tok, NULL, 10);
	if (v < 0) {
		char shown[128] = "";
		FILE *m = fmemopen(shown, sizeof shown - 1, "w");
		if (m) {
			print_piece(m, (const unsigned char *)tok, n > 24 ? 24 : n);
			fclose(m);
		}
		cli_die("%s: line %ld: '%s%s' is not a token id", name, line, shown,
		    n > 24 ? "..." : "");
	}
	size_t len;
	const unsigned char *b = v <= INT32_MAX ? tok_bytes(t, (int32_t)v, &len) : NULL;
	if (!b && v >= tok_n_ids(t) && v < pad_end)
		return;
	if (!b)
		cli_die("%s: line %ld: %ld is not in the vocabulary (ids 0..%d)", name, line, v,
		    tok_n_ids(t) - 1);
	if (o->skip_special && tok_is_special(t, (int32_t)v))
		return;
	unsigned char text[512];
	while (len > 0) { /* tokens are short; a long one goes in chunks */
		size_t k = len < sizeof text - 3 ? len : sizeof text - 3;
		size_t m = utf8_hold_push(h, b, k, text);
		emit_text(text, m, 0);
		b += k;
		len -= k;
	}
}

/* Streams ids to text: input is read as it arrives (read(2)), and what
 * each read completes is written and flushed at once, so a pipeline shows
 * text as it is generated; a character split across tokens waits for the
 * token that completes it. */
static void decode_fd(const struct tokenizer *t, const struct opts *o, int fd,
		      const char *name, struct utf8_hold *h)
{
	char buf[1 << 16], tok[32];
	size_t tn = 0;  /* length of the id being read (tok holds its start) */
	long line = 1, tok_line = 1;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			cli_die("%s: %s", name, strerror(errno));
		for (ssize_t i = 0; i < r; i++) {
			char c = buf[i];
			if (!strchr(" \n\t\r\v\f", c) || c == 0) {
				if (!tn)
					tok_line = line;
				if (tn < sizeof tok - 1)
					tok[tn] = c;
				tn++;
				continue;
			}
			line += c == '\n';
			if (tn) {
				tok[tn < sizeof tok ? tn : sizeof tok - 1] = 0;
				decode_one(t, o, name, tok_line, tok, tn, h);
				tn = 0;
			}
		}
		if (r == 0 && tn) { /* the last id, with no whitespace after it */
			tok[tn < sizeof tok ? tn : sizeof tok - 1] = 0;
			decode_one(t, o, name, tok_line, tok, tn, h);
		}
		if (fflush(stdout) != 0)
			cli_exit(EXIT_FAIL);
		if (r == 0)
			return;
	}
}

static int cmd_decode(const struct opts *o)
{
	stop.stops = o->stops;
	stop.n = o->n_stops;
	struct tokenizer *t = load(o);
	pad_end = model_vocab(tokenizer_path(o));
	struct utf8_hold h = { 0 };
	static char *dash[] = { "-" };
	char **files = o->n_files ? o->files : dash;
	int n = o->n_files ? o->n_files : 1;
	for (int i = 0; i < n; i++) {
		int stdin_ = !strcmp(files[i], "-");
		int fd = stdin_ ? 0 : open(files[i], O_RDONLY);
		if (fd < 0)
			cli_die("%s: %s", files[i], strerror(errno));
		decode_fd(t, o, fd, stdin_ ? "<stdin>" : files[i], &h);
		if (!stdin_)
			close(fd);
	}
	unsigned char rest[4];
	size_t m = utf8_hold_flush(&h, rest);
	emit_text(rest, m, 1);  /* no stop string came: what is held, too */
	tok_free(t);
	decode_done();
}

static int cmd_chat(const struct opts *o)
{
	/* the template shipped beside tokenizer.json must be the one we
	 * render; a container carries none */
	if (qfile_sniff(tokenizer_path(o)))
		cli_die("%s: a container carries no tokenizer_config.json, so no chat template "
		    "(give --tokenizer the model directory it was made from)", tokenizer_path(o));
	struct tokenizer *t = load(o);
	struct err e;
	check_template(tok_path(t));

	struct chat_msg *msgs = NULL;
	size_t count = 0;
	if (o->system || o->user) {
		msgs = calloc(2, sizeof *msgs);
		if (!msgs)
			cli_die("out of memory");
		if (o->system)
			msgs[count++] = (struct chat_msg){ .role = strdup("system"),
						     .content = strdup(o->system) };
		if (o->user)
			msgs[count++] = (struct chat_msg){ .role = strdup("user"),
						     .content = strdup(o->user) };
	} else {
		size_t n;
		char *s = slurp("-", &n, &e);
		if (!s)
			cli_die_err(&e);
		if (chat_parse(s, n, &msgs, &count, &e) < 0) {
			err_prefix(&e, "<stdin>");
			cli_die_err(&e);
		}
		free(s);
	}
	char *text;
	size_t len;
	if (chat_render(msgs, count, o->generation_prompt, &text, &len, &e) < 0)
		cli_die_err(&e);
	if (o->out == OUT_TEXT) {
		fwrite(text, 1, len, stdout);
	} else {
		int warned = 0;
		encode_one(t, o, "-", (const unsigned char *)text, len, &warned);
	}
	free(text);
	chat_free(msgs, count);
	tok_free(t);
	return EXIT_OK;
}

static void set_out(struct opts *o, enum out_mode m, const char *flag)
{
	if (o->out_set && o->out != m)
		cli_die_usage("%s: only one of --pieces, --count, --json, --text", flag);
	o->out = m;
	o->out_set = 1;
}

int main(int argc, char **argv)
{
	struct opts o = { .generation_prompt = 1, .out = OUT_IDS };
	const char *v;
	cli_init(&spec);
	if (argc >= 2 && argv[1][0] == '-') {
		cli_getopt(argc, argv, &v);  /* exits for --help, --version, --options */
		cli_die_usage("missing command (encode, decode or chat) before '%s'", argv[1]);
	}
	if (argc < 2)
		cli_die_usage("missing command (encode, decode or chat)");
	o.cmd = argv[1];
	int enc = !strcmp(o.cmd, "encode"), dec = !strcmp(o.cmd, "decode");
	int chat = !strcmp(o.cmd, "chat");
	if (!enc && !dec && !chat)
		cli_die_usage("unknown command '%s' (encode, decode or chat)", o.cmd);
	/* The flags after the command: argv + 1 puts the command where getopt
	 * expects the program's name. */
	enum { E = 1, D = 2, C = 4 };  /* the commands a flag is for */
	if (!(o.stops = calloc((size_t)argc, sizeof *o.stops)))
		cli_die("out of memory");
	int cmd = enc ? E : dec ? D : C, c;
	while ((c = cli_getopt(argc - 1, argv + 1, &v)) != -1) {
		const struct cli_opt *f = opts;
		while (f->id != c)
			f++;
		int scope = c == OPT_TOKENIZER ? E | D | C
			: c == OPT_NO_SPECIAL ? E
			: c == OPT_SKIP_SPECIAL || c == OPT_STOP ? D
			: c == OPT_PIECES || c == OPT_COUNT || c == OPT_JSON ? E | C
			: C;
		if (!(scope & cmd))
			cli_die_usage("--%s: unknown option for tok %s", f->names, o.cmd);
		switch (c) {
		case OPT_TOKENIZER: o.tokenizer = v; break;
		case OPT_NO_SPECIAL: o.flags |= TOK_NO_SPECIAL; break;
		case OPT_SKIP_SPECIAL: o.skip_special = 1; break;
		case OPT_STOP:
			if (!*v)
				cli_die_usage("--stop: the text is empty");
			o.stops[o.n_stops++] = v;
			break;
		case OPT_PIECES: set_out(&o, OUT_PIECES, "--pieces"); break;
		case OPT_COUNT: set_out(&o, OUT_COUNT, "--count"); break;
		case OPT_JSON: set_out(&o, OUT_JSON, "--json"); break;
		case OPT_TEXT: set_out(&o, OUT_TEXT, "--text"); break;
		case OPT_SYSTEM: o.system = v; break;
		case OPT_USER: o.user = v; break;
		case OPT_NO_GEN_PROMPT: o.generation_prompt = 0; break;
		}
	}
	o.files = argv + 1 + optind;
	o.n_files = argc - 1 - optind;
	if (chat && o.n_files)
		cli_die_usage("%s: tok chat takes no files (messages come on stdin)", o.files[0]);
	int rc = enc ? cmd_encode(&o) : dec ? cmd_decode(&o) : cmd_chat(&o);
	free(o.stops);
	cli_exit(rc);
}
