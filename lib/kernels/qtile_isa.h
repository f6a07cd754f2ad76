/* qtile_isa: the per-ISA kernels behind lib/kernels/qtile.h (internal to
 * lib/kernels/). Each computes qtile_matmul's outputs in its order; the
 * *_avx2 / *_vnni files are compiled for that ISA only, and qtile.c calls
 * them after checking CPUID. */
#ifndef QTILE_ISA_H
#define QTILE_ISA_H

#include "kernels/qtile.h"

typedef void qtile_fn(const struct wmat *w, float *y, int ldy, int r0, int r1,
		      const struct q8act *a, int T);

qtile_fn qtile_matmul_scalar, qtile_matmul_avx2, qtile_matmul_vnni;

/* The tile's geometry, shared by the kernels: tile bytes, the scale area
 * (the codes start there) and the blocks. */
struct qtile_geom {
	size_t tile, area;
	int nb;
	enum qtile_scales s;
};

void qtile_geom(const struct wmat *w, struct qtile_geom *g);

#endif
