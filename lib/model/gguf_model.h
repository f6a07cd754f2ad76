/* gguf_model: a Qwen2 model loaded from a GGUF file alone (llama.cpp's
 * format; lib/format/gguf.h reads it, lib/format/gguf_arch.h gives the
 * config, the generation defaults and Hugging Face's names).
 *
 * The file is validated whole, its config taken from its qwen2.* keys, and
 * its tensors diffed against the manifest that config implies (an error
 * names the first difference). Then each matrix becomes a `struct wmat`:
 *   BF16, F16, F32  as stored (views: the same bits as a safetensors
 *              model; F16 on the f16 kernels);
 *   Q4_0       our int4 with groups of 32 (WT_Q4): ggml's block is our
 *              packing byte for byte (lib/kernels/quant.h: low nibbles the
 *              block's first 16 weights, high nibbles the last 16, each
 *              q + 8) and its f16 scale is a float exactly, so the repacking
 *              is exact and the int4 kernels run on it;
 *   Q8_0       int8 in groups of 32 (WT_Q8 with group_size 32): the codes
 *              to one array, the f16 scales as floats to another, exactly;
 *   Q5_0, Q5_1 the 5-bit tiles of lib/kernels/qtile.h (WT_Q50, WT_Q51),
 *              every block's codes and halves put in place, exactly;
 *   IQ4_NL     the 4-bit tiles of qtile.h (WT_IQ4), every block's indices
 *              and half put in place, exactly;
 *   IQ4_XS     the same, each group of 32 of a super-block of 256 with its
 *              scale (the super-block's half times the group's 6-bit scale,
 *              a float exactly, which the tiles hold as a float);
 *   Q4_K, Q5_K, Q6_K  the K-quant tiles of lib/kernels/kquant.h, every
 *              super-block decoded and put in place, exactly;
 *   Q3_K       the Q6_K tiles: each super-block is a Q6_K one exactly
 *              (lib/format/gguf_quant.c);
 *   Q4_1, Q2_K dequantized exactly at load, to
 *              bf16 where every value of the matrix is one exactly, else
 *              float32.
 * With opts->f32 every matrix is dequantized to float32: the float32 model
 * of the file's exact values. Vectors (norms, biases) are widened to float
 * as always. m->note says what was converted (for -v). mmap: the views of
 * BF16 and F32 matrices point into the mapping; otherwise into a copy of
 * the file in anonymous memory, as for safetensors (model.h), which holds
 * only the header and those matrices: the others are converted from the
 * mapping, and its pages given back after each (madvise), so that no
 * file byte is resident twice. A K-quant super-block whose d or dmin is
 * Inf or NaN is refused naming the tensor, as is a Q4_0, Q8_0, Q5_0,
 * Q5_1, IQ4_NL or IQ4_XS block whose scale (or min) is.
 */
#ifndef GGUF_MODEL_H
#define GGUF_MODEL_H

#include "core/err.h"
#include "model/model.h"

int model_load_gguf(struct model *m, const char *path, const struct model_opts *o,
		    struct err *e);

#endif
