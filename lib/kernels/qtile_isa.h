/* qtile_isa: the per-ISA kernels behind lib/kernels/qtile.h (internal to
 * lib/kernels/). Each is an entry of the kernel table (struct kernels,
 * lib/kernels/kernels.h: mm[WT_Q4 or WT_Q8][KA_Q8]) and computes the
 * int8-activation product in qtile.h's order; the *_avx2 / *_vnni files
 * are compiled for that ISA only, and kernels_for puts them in the table
 * of a level the CPU has. */
#ifndef QTILE_ISA_H
#define QTILE_ISA_H

#include "kernels/kernels.h"
#include "kernels/qtile.h"

/* Any tiled matrix (the scalar reference), and by ISA: int4 and int8. */
kern_mm_fn qtile_mm_scalar;
kern_mm_fn qtile_q4_avx2, qtile_q8_avx2, qtile_q4_vnni, qtile_q8_vnni;

/* The tile's geometry, shared by the kernels: tile bytes, the scale area
 * (the codes start there) and the blocks. */
struct qtile_geom {
	size_t tile, area;
	int nb;
	enum qtile_scales s;
};

void qtile_geom(const struct wmat *w, struct qtile_geom *g);

/* An ISA's loop over the tiles of m, for int4 or int8 codes (q4) and one
 * kind of scales (constants where it is inlined). */
typedef void qtile_tiles_fn(const struct kern_mm *m, const struct qtile_geom *g, const int q4,
			    const enum qtile_scales s);

/* Runs tiles, always_inline in the ISA's file, with the scales of m's
 * matrix as a constant: the one choice of kernel for a tiled matrix, an
 * instance per kind of scales (int4 never has QT_ROW). */
static inline __attribute__((always_inline)) void
qtile_run(const struct kern_mm *m, qtile_tiles_fn *tiles, const int q4)
{
	struct qtile_geom g;
	qtile_geom(m->w, &g);
	if (g.s == QT_F16)
		tiles(m, &g, q4, QT_F16);
	else if (g.s == QT_F32 || q4)
		tiles(m, &g, q4, QT_F32);
	else
		tiles(m, &g, q4, QT_ROW);
}

#endif
