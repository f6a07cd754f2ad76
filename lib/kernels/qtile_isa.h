/* qtile_isa: the per-ISA kernels behind lib/kernels/qtile.h (internal to
 * lib/kernels/). Each is an entry of the kernel table (struct kernels,
 * lib/kernels/kernels.h: mm[WT_Q4, WT_Q8, WT_Q50, WT_Q51 or WT_IQ4][KA_Q8]) and computes the
 * int8-activation product in qtile.h's order; the *_avx2 / *_vnni files
 * are compiled for that ISA only, and kernels_for puts them in the table
 * of a level the CPU has. */
#ifndef QTILE_ISA_H
#define QTILE_ISA_H

#include "kernels/kernels.h"
#include "kernels/qtile.h"

/* Any tiled matrix (int4, int8, Q5_0, Q5_1, IQ4): the scalar reference, and
 * by ISA. */
kern_mm_fn qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni;

/* The tile's geometry, shared by the kernels: tile bytes and blocks (the
 * groups follow from the type and the scales, qtile_group). */
struct qtile_geom {
	size_t tile;
	int nb;
	enum qtile_scales s;
};

void qtile_geom(const struct wmat *w, struct qtile_geom *g);

/* A kernel's walk along one tile (qtile.h's layout) keeps the line of
 * scales of the current block's group and the block's codes, starting at
 * the tile and QTILE_LINE bytes on. After block b (cb bytes of codes, G
 * blocks a group): past its codes, and past the next group's line when b
 * ends its group. */
static inline __attribute__((always_inline)) void
qtile_walk_next(const uint8_t **line, const uint8_t **codes, size_t cb, int G, int b)
{
	*codes += cb;
	if (G && b % G == G - 1) {
		*line = *codes;
		*codes += QTILE_LINE;
	}
}

/* An ISA's loop over the tiles of m, for one weight type (WT_Q4, WT_Q8,
 * WT_Q50, WT_Q51, WT_IQ4) and one kind of scales (constants where it is inlined). */
typedef void qtile_tiles_fn(const struct kern_mm *m, const struct qtile_geom *g,
			    const enum wtype type, const enum qtile_scales s);

/* tiles for a grouped matrix of one type, its scales halves or floats
 * (constants where this is inlined). */
static inline __attribute__((always_inline)) void
qtile_run_grouped(const struct kern_mm *m, const struct qtile_geom *g, qtile_tiles_fn *tiles,
		  const enum wtype type)
{
	if (g->s == QT_F16)
		tiles(m, g, type, QT_F16);
	else
		tiles(m, g, type, QT_F32);
}

/* Runs tiles, always_inline in the ISA's file, with m's weight type and
 * the scales of its matrix as constants: the one choice of kernel for a
 * tiled matrix, an instance per type and kind of scales (int4 and IQ4
 * never have QT_ROW, Q5 has only QT_F16). */
static inline __attribute__((always_inline)) void
qtile_run(const struct kern_mm *m, qtile_tiles_fn *tiles)
{
	struct qtile_geom g;
	qtile_geom(m->w, &g);
	switch (m->w->type) {
	case WT_Q50: tiles(m, &g, WT_Q50, QT_F16); return;
	case WT_Q51: tiles(m, &g, WT_Q51, QT_F16); return;
	case WT_Q4: qtile_run_grouped(m, &g, tiles, WT_Q4); return;
	case WT_IQ4: qtile_run_grouped(m, &g, tiles, WT_IQ4); return;
	default:
		if (g.s == QT_ROW)
			tiles(m, &g, WT_Q8, QT_ROW);
		else
			qtile_run_grouped(m, &g, tiles, WT_Q8);
		return;
	}
}

#endif
