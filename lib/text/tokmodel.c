/* tokmodel: a model's tokenizer and chat template (tokmodel.h). */
#include "text/tokmodel.h"

#include "format/gguf.h"
#include "format/gguf_arch.h"
#include "format/modelfile.h"
#include "text/chat.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The tokenizer of a GGUF file, from its arrays (lib/core/vocab.h). */
static struct tokenizer *load_gguf(const char *path, struct err *e)
{
	struct gguf_file f;
	struct bpe_vocab v;
	if (gguf_open(&f, path, e) < 0)
		return NULL;
	struct tokenizer *t = NULL;
	if (gguf_vocab(&f, path, &v, e) == 0) {
		t = tok_from_vocab(&v, path, e);
		bpe_vocab_free(&v);
	}
	gguf_close(&f);
	return t;
}

struct tokenizer *tokmodel_load(const char *path, struct err *e)
{
	if (gguf_sniff(path))
		return load_gguf(path, e);
	struct model_file f;
	if (model_file_open(&f, path, "tokenizer.json", e) < 0)
		return NULL;
	struct tokenizer *t = tok_parse(f.data, f.size, f.name, e);
	model_file_close(&f);
	return t;
}

int tokmodel_check_template(const char *path, struct err *e)
{
	if (gguf_sniff(path)) {
		struct gguf_file f;
		const char *s;
		uint64_t n;
		if (gguf_open(&f, path, e) < 0)
			return -1;
		int rc = gguf_get_str(&f, "tokenizer.chat_template", &s, &n, path, e);
		if (rc == 1)
			rc = err_set(e, "%s: key 'tokenizer.chat_template': missing", path);
		else if (rc == 0)
			rc = chat_check_template(s, (size_t)n, path, e);
		gguf_close(&f);
		return rc;
	}
	size_t dl = strlen(path);
	while (dl > 0 && path[dl - 1] != '/')
		dl--;
	char config[PATH_MAX + 32];
	snprintf(config, sizeof config, "%.*stokenizer_config.json", (int)dl, path);
	return chat_check(config, e);
}
