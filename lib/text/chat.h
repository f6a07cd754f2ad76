/* chat: Qwen2.5's chat template (ChatML), rendered natively.
 *
 * What it renders is exactly what the Jinja template shipped in Qwen2.5's
 * tokenizer_config.json renders for conversations without tools:
 *
 *   <|im_start|>system\n{first message if it is a system message, else
 *     "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."}<|im_end|>\n
 *   then each message: <|im_start|>{role}\n{content}<|im_end|>\n
 *     (a leading system message is not repeated; consecutive "tool"
 *     messages become one user turn of <tool_response> blocks)
 *   then, with the generation prompt, <|im_start|>assistant\n
 *
 * A message's content is a string, or an array of OpenAI's content parts
 * of type "text", whose texts are joined by newlines (as llama-server
 * joins them). A "developer" message is a system message (OpenAI's newer
 * name for it). Left out, and refused: tool definitions and assistant
 * tool_calls, roles other than system/developer/user/assistant/tool, other
 * content (null, numbers, image or audio parts).
 * Because the template is code that a model may ship changed, chat_check
 * compares the model's template with the one implemented here and refuses
 * any other.
 */
#ifndef CHAT_H
#define CHAT_H

#include <stddef.h>

#include <cJSON.h>

#include "core/err.h"

struct chat_msg {
	char *role;
	char *content;
};

/* Checks that the chat_template in the tokenizer_config.json at path is
 * the template implemented here. Returns 0, or -1 with "path: ..." in e. */
int chat_check(const char *config_path, struct err *e);

/* The same for a template text t[0..n) (a GGUF file's
 * tokenizer.chat_template); name is used in messages. */
int chat_check_template(const char *t, size_t n, const char *name, struct err *e);

/* Parses a JSON array of {"role", "content"} objects from json[0..n).
 * On success *msgs (free with chat_free) holds *count messages. Errors name
 * the message: "messages[2]: content is not a string or an array of text
 * parts". */
int chat_parse(const char *json, size_t n, struct chat_msg **msgs, size_t *count,
	       struct err *e);

/* The same from a parsed array j (a request's "messages"). */
int chat_from_json(const cJSON *j, struct chat_msg **msgs, size_t *count, struct err *e);

void chat_free(struct chat_msg *msgs, size_t count);

/* Renders msgs[0..count) (count > 0). *out (free with free()) gets the
 * text, NUL-terminated, *len its length. */
int chat_render(const struct chat_msg *msgs, size_t count, int generation_prompt,
		char **out, size_t *len, struct err *e);

#endif
