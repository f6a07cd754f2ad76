/* fuzz_gguf: gguf_parse (header, metadata of every type, tensor infos, the
 * data section's layout), then what the model loader asks of an accepted
 * file (the qwen2 config, every value as text, small tensors dequantized)
 * on arbitrary bytes. An accepted file's views lie inside the input, its
 * tensors tile the data section in offset order, and its names are
 * unique; a small K-quant (Q3_K as Q6_K), Q5_0 or Q5_1 tensor repacked
 * into the kernels' tiles (lib/kernels/kquant.h, qtile.h) reads back as
 * gguf_dequant's values, bitwise, and a Q8_0, IQ4_NL or IQ4_XS one's int8
 * groups (as the loader makes them) give its values as scale * code. */
#include "fuzz.h"
#include "sample/sampler.h"
#include "format/gguf.h"
#include "format/gguf_arch.h"
#include "kernels/matmul.h"
#include "kernels/qtile.h"

#include <math.h>
#include <stdint.h>

/* t (a K-quant but Q2_K, Q5_0 or Q5_1 of at most 1 << 16 values) put into the
 * kernels' tiles as the loader does (lib/kernels/kquant.h, qtile.h): each
 * row read back is v's row, bitwise. */
static void check_tiles(const struct gguf_tensor *t, const float *v)
{
	int kq = t->type == GGML_Q3_K || t->type == GGML_Q4_K || t->type == GGML_Q5_K ||
		 t->type == GGML_Q6_K;
	int cols = (int)t->ne[0], rows = (int)(t->nelem / (uint64_t)t->ne[0]);
	int per = kq ? KQ_SB : 32;  /* values a block */
	struct wmat w = { .type = gguf_tile_wtype(t->type), .rows = rows, .cols = cols,
			  .tiled = kq ? 0 : QT_F16 + 1 };
	size_t bytes = kq ? kq_bytes(w.type, rows, cols) : qtile_bytes(w.type, rows, cols, QT_F16);
	void *data = aligned_alloc(64, (bytes + 63) / 64 * 64);
	float *row = malloc(sizeof(float) * (size_t)cols);
	if (data && row) {
		memset(data, 0, bytes);
		w.data = data;
		const unsigned char *b = t->data;
		for (int r = 0; r < rows; r++)
			for (int s = 0; s < cols / per; s++, b += gguf_ttype_size(t->type)) {
				if (kq) {
					struct kq_block k;
					gguf_kdecode(t->type, b, &k);
					kq_put(&w, data, r, s, &k);
				} else {
					uint8_t u[32];
					uint16_t d, m;
					gguf_q5_block(t->type, b, u, &d, &m);
					qtile_q5_put(&w, data, r, s, u, d, m);
				}
			}
		for (int r = 0; r < rows; r++) {
			kern_row(&w, r, row);
			FUZZ_CHECK(!memcmp(row, v + (size_t)r * (size_t)cols, sizeof(float) * (size_t)cols));
		}
	}
	free(data);
	free(row);
	int64_t bad = gguf_bad_scale(t->type, t->data, t->nelem);
	FUZZ_CHECK(bad >= -1 && bad < (int64_t)(t->nelem / KQ_SB) && (kq || bad == -1));
}

/* t (Q8_0, IQ4_NL or IQ4_XS) as the loader holds it, int8 groups of 32
 * with a float scale each (gguf_int8_group): every group's scale * code is
 * v's value, bitwise. */
static void check_groups(const struct gguf_tensor *t, const float *v)
{
	for (uint64_t k = 0; k < t->nelem / 32; k++) {
		int8_t q[32];
		float s = gguf_int8_group(t->type, t->data, k, q);
		for (int j = 0; j < 32; j++) {
			float x = s * (float)q[j];
			FUZZ_CHECK(!memcmp(&x, &v[32 * k + (uint64_t)j], sizeof x));
		}
	}
}

static void check_kv(const struct gguf_kv *kv, const unsigned char *buf, size_t size)
{
	const unsigned char *end = buf + size;
	char text[512];
	gguf_kv_text(kv, text, sizeof text);
	FUZZ_CHECK(strlen(text) < sizeof text);
	if (kv->type == GGUF_STRING)
		FUZZ_CHECK((const unsigned char *)kv->s >= buf &&
			   kv->slen <= (uint64_t)(end - (const unsigned char *)kv->s));
	if (kv->type != GGUF_ARRAY)
		return;
	const unsigned char *pos = kv->arr;
	FUZZ_CHECK(pos >= buf && pos <= end);
	if (kv->atype == GGUF_STRING) {
		for (uint64_t i = 0; i < kv->n; i++) {
			uint64_t len;
			const char *s = gguf_arr_str(&pos, &len);
			FUZZ_CHECK((const unsigned char *)s + len <= end);
		}
	} else if (kv->n) {
		(void)gguf_arr_float(kv, kv->n - 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct gguf_file f;
	struct err e;
	if (gguf_parse(&f, buf, size, "fuzz.gguf", &e) < 0) {
		fuzz_check_msg(&e, "fuzz.gguf");
		free(buf);
		return 0;
	}
	FUZZ_CHECK(f.version == 2 || f.version == 3);
	FUZZ_CHECK(f.alignment && !(f.alignment & (f.alignment - 1)));
	FUZZ_CHECK(f.data_offset <= size);
	for (int i = 0; i < f.nkv; i++) {
		check_kv(&f.kv[i], buf, size);
		FUZZ_CHECK(gguf_find_kv(&f, f.kv[i].key) == &f.kv[i]);
	}
	for (int i = 0; i < f.ntensors; i++) {
		const struct gguf_tensor *t = &f.t[i];
		const unsigned char *d = t->data;
		FUZZ_CHECK(d >= buf + f.data_offset && t->bytes <= size - (size_t)(d - buf));
		FUZZ_CHECK(t->offset % f.alignment == 0);
		FUZZ_CHECK(gguf_find_tensor(&f, t->name) == t);
		for (int j = 0; j < f.ntensors; j++)
			FUZZ_CHECK(j == i || f.t[j].offset + f.t[j].bytes <= t->offset ||
				   t->offset + t->bytes <= f.t[j].offset);
		if (gguf_can_dequant(t->type) && t->nelem <= 1 << 16) {
			float *v = malloc(sizeof(float) * t->nelem);
			if (v) {
				FUZZ_CHECK(gguf_dequant(t->type, t->data, t->nelem, v) == 0);
				if (t->type == GGML_Q3_K || t->type == GGML_Q4_K ||
				    t->type == GGML_Q5_K || t->type == GGML_Q6_K ||
				    t->type == GGML_Q5_0 || t->type == GGML_Q5_1)
					check_tiles(t, v);
				if (t->type == GGML_Q8_0 || t->type == GGML_IQ4_NL ||
				    t->type == GGML_IQ4_XS)
					check_groups(t, v);
				int64_t bad = gguf_bad_scale(t->type, t->data, t->nelem);
				FUZZ_CHECK(bad >= -1 && bad < (int64_t)(t->nelem / KQ_SB));
			}
			free(v);
		}
	}
	struct model_config c;
	struct gen_config g;
	if (gguf_qwen2_config(&f, "fuzz.gguf", &c, &g, &e) < 0)
		fuzz_check_msg(&e, "fuzz.gguf");
	else
		FUZZ_CHECK(c.head_dim * c.n_heads == c.hidden_size &&
			   c.n_heads % c.n_kv_heads == 0 && c.vocab_size > 0 &&
			   /* the checks config.json's values get */
			   isfinite(c.rope_theta) && c.rope_theta > 0 &&
			   isfinite(c.rms_norm_eps) && c.rms_norm_eps > 0 &&
			   c.rms_norm_eps <= 1 &&
			   /* sampling settings the sampler takes */
			   sampler_params_check(&(struct sampler_params){
				   .temperature = g.temperature, .top_k = g.top_k,
				   .top_p = g.top_p, .min_p = g.min_p,
				   .repetition_penalty = g.repetition_penalty }, &e) == 0);
	gguf_close(&f);
	free(buf);
	return 0;
}
