/* weights: a view of one weight matrix, whatever its storage.
 *
 * The forward pass multiplies activations by matrices stored as float32,
 * bfloat16 or float16 (read directly: 2 bytes per weight, widened exactly
 * in registers) or the quantized formats of the containers. A `struct wmat` describes one such
 * matrix without owning it: data points into a mapping or into memory the
 * model owns. Kernels (lib/kernels/kernels.h) dispatch on `type`.
 *
 * Layout, for every type: row-major [rows x cols], one row per output
 * feature, as in PyTorch's nn.Linear weight (y = W x).
 *   WT_F32   float    data[rows * cols]
 *   WT_BF16  uint16_t data[rows * cols]
 *   WT_F16   uint16_t data[rows * cols], IEEE binary16 (GGUF's F16)
 *   WT_Q8    int8_t   data[rows * cols]; group_size 0: float scales[rows],
 *            one per row, w = scales[r] * q (our containers); group_size
 *            G > 0: float scales[rows * cols / G], one per G weights along
 *            cols, w = scales[r * (cols / G) + c / G] * q (GGUF's Q8_0,
 *            G = 32)
 *   WT_Q4    uint8_t  data[rows * cols / 2], two weights per byte, group-wise
 *            along cols with group_size weights per group, float
 *            scales[rows * cols / group_size]; the nibble packing and any
 *            offset are defined in lib/kernels/quant.h
 */
#ifndef WEIGHTS_H
#define WEIGHTS_H

#include <stdint.h>

/* WT_F32 .. WT_Q4 are also the type codes of a container's tensors (0 to
 * 3, lib/format/qfile.h); a container holds no WT_F16. */
enum wtype { WT_F32, WT_BF16, WT_Q8, WT_Q4, WT_F16 };

struct wmat {
	enum wtype type;
	int rows, cols;
	const void *data;
	const float *scales;  /* WT_Q8, WT_Q4 */
	int group_size;       /* WT_Q4; WT_Q8 when its scales are per group */
};

/* Whether w stores integers (WT_Q8, WT_Q4). */
static inline int wmat_is_int(const struct wmat *w)
{
	return w->type == WT_Q8 || w->type == WT_Q4;
}

/* Whether w's scales are per group of group_size weights (WT_Q4, and WT_Q8
 * with a group_size), not per row. */
static inline int wmat_grouped(const struct wmat *w)
{
	return w->type == WT_Q4 || (w->type == WT_Q8 && w->group_size > 0);
}

#endif
