/* chat: see chat.h. */
#include "text/chat.h"
#include "core/jsonutil.h"
#include "core/mapfile.h"
#include "core/sbuf.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a 64 of the chat_template string of Qwen2.5's tokenizer_config.json
 * (2,507 bytes; the Instruct models of every size share it). */
#define QWEN25_TEMPLATE_FNV 0xc2b27ee60f1b8775ULL

static const char DEFAULT_SYSTEM[] =
	"You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

int chat_check(const char *config_path, struct err *e)
{
	struct mapfile m;
	if (mapfile_open(&m, config_path, e) < 0)
		return -1;
	cJSON *j;
	int bad = json_parse_text(&j, (const char *)m.data, m.size, config_path, e);
	mapfile_close(&m);
	if (bad)
		return -1;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
	int rc = !cJSON_IsString(t) ? err_set(e, "%s: no chat_template", config_path) :
		 chat_check_template(t->valuestring, strlen(t->valuestring), config_path, e);
	cJSON_Delete(j);
	return rc;
}

int chat_check_template(const char *t, size_t n, const char *name, struct err *e)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)t[i]) * 0x100000001b3ULL;
	if (h != QWEN25_TEMPLATE_FNV)
		return err_set(e, "%s: chat_template is not Qwen2.5's ChatML template, "
			       "the only one implemented", name);
	return 0;
}

void chat_free(struct chat_msg *msgs, size_t count)
{
	for (size_t i = 0; msgs && i < count; i++) {
		free(msgs[i].role);
		free(msgs[i].content);
	}
	free(msgs);
}

static int known_role(const char *r)
{
	return !strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant") ||
	       !strcmp(r, "tool") || !strcmp(r, "developer");
}

/* The text of message k's content: a string, or an array of content parts
 * (OpenAI's form), each {"type": "text", "text": ...}, joined by newlines
 * as llama-server joins them. Returns it (free with free()), or NULL with
 * e set. */
static char *content_text(const cJSON *content, size_t k, struct err *e)
{
	if (cJSON_IsString(content)) {
		char *s = strdup(content->valuestring);
		if (!s)
			err_set(e, "out of memory");
		return s;
	}
	if (!cJSON_IsArray(content)) {
		err_set(e, "messages[%zu]: content is not a string or an array of text parts", k);
		return NULL;
	}
	struct sbuf b = { 0 };
	size_t i = 0;
	const cJSON *part;
	cJSON_ArrayForEach(part, content) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text")) {
			err_set(e, "messages[%zu]: content[%zu]: only parts of type \"text\" are supported", k, i);
			free(b.p);
			return NULL;
		}
		if (!cJSON_IsString(text)) {
			err_set(e, "messages[%zu]: content[%zu]: text is not a string", k, i);
			free(b.p);
			return NULL;
		}
		if (i++ > 0)
			sbuf_puts(&b, "\n");
		sbuf_puts(&b, text->valuestring);
	}
	sbuf_puts(&b, "");
	if (b.oom || !b.p) {
		free(b.p);
		err_set(e, "out of memory");
		return NULL;
	}
	return b.p;
}

int chat_parse(const char *json, size_t n, struct chat_msg **msgs, size_t *count,
	       struct err *e)
{
	cJSON *j;
	if (json_parse_text(&j, json, n, NULL, e) < 0)
		return -1;
	int rc = chat_from_json(j, msgs, count, e);
	cJSON_Delete(j);
	return rc;
}

int chat_from_json(const cJSON *j, struct chat_msg **msgs, size_t *count, struct err *e)
{
	int rc = -1;
	size_t k = 0, cap = (size_t)cJSON_GetArraySize(j);
	struct chat_msg *m = calloc(cap ? cap : 1, sizeof *m);
	if (!cJSON_IsArray(j)) {
		err_set(e, "expected a JSON array of messages");
		goto out;
	}
	if (cap == 0) {
		err_set(e, "no messages");
		goto out;
	}
	if (!m) {
		err_set(e, "out of memory");
		goto out;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, j) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
		if (!cJSON_IsObject(it)) {
			err_set(e, "messages[%zu]: not an object", k);
			goto out;
		}
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(it, "tool_calls");
		if (calls && !cJSON_IsNull(calls) && cJSON_GetArraySize(calls) != 0) {
			err_set(e, "messages[%zu]: tool_calls are not supported", k);
			goto out;
		}
		if (!cJSON_IsString(role) || !known_role(role->valuestring)) {
			err_set(e, "messages[%zu]: role must be system (or developer), user, "
				"assistant or tool", k);
			goto out;
		}
		/* OpenAI's newer name for the system message */
		m[k].role = strdup(strcmp(role->valuestring, "developer") ? role->valuestring :
				   "system");
		m[k].content = content_text(content, k, e);
		k++;
		if (!m[k - 1].content)
			goto out;
		if (!m[k - 1].role) {
			err_set(e, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	if (rc < 0) {
		chat_free(m, k);
		return -1;
	}
	*msgs = m;
	*count = k;
	return 0;
}

int chat_render(const struct chat_msg *msgs, size_t count, int generation_prompt,
		char **out, size_t *len, struct err *e)
{
	struct sbuf b = { 0 };
	sbuf_puts(&b, "<|im_start|>system\n");
	sbuf_puts(&b, !strcmp(msgs[0].role, "system") ? msgs[0].content : DEFAULT_SYSTEM);
	sbuf_puts(&b, "<|im_end|>\n");
	for (size_t i = 0; i < count; i++) {
		const char *role = msgs[i].role;
		if (!strcmp(role, "tool")) {
			if (i == 0 || strcmp(msgs[i - 1].role, "tool"))
				sbuf_puts(&b, "<|im_start|>user");
			sbuf_puts(&b, "\n<tool_response>\n");
			sbuf_puts(&b, msgs[i].content);
			sbuf_puts(&b, "\n</tool_response>");
			if (i + 1 == count || strcmp(msgs[i + 1].role, "tool"))
				sbuf_puts(&b, "<|im_end|>\n");
		} else if (strcmp(role, "system") || i > 0) {
			sbuf_puts(&b, "<|im_start|>");
			sbuf_puts(&b, role);
			sbuf_puts(&b, "\n");
			sbuf_puts(&b, msgs[i].content);
			sbuf_puts(&b, "<|im_end|>\n");
		}
	}
	if (generation_prompt)
		sbuf_puts(&b, "<|im_start|>assistant\n");
	if (b.oom) {
		free(b.p);
		return err_set(e, "out of memory");
	}
	*out = b.p;
	*len = b.n;
	return 0;
}
