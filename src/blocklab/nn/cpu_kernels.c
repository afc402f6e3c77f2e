/* RMSNorm, residual-add + RMSNorm, gated activations (SwiGLU, GeGLU) and half-split RoPE on
 * CPU, float32, forward and backward; every one of them in bfloat16 too
 * (bfloat16 in and out, float32 inside: see the bfloat16 sections at the end).
 *
 * Compiled on first use by blocklab/nn/cpu_kernels.py (cc -O3 -march=native -fopenmp) and called
 * through ctypes with raw pointers to contiguous row-major tensors. Rows are split across
 * `threads` OpenMP threads; each row is read from memory once per pass and then worked on from
 * cache, so a pass costs about one read of its inputs and one write of its outputs.
 *
 *   forward:  r = 1 / sqrt(mean(x^2) + eps),  y = x * r * g          (g = w or 1 + w)
 *   backward: p = sum_j dy*g*x,  dx = r*dy*g - x * r^3 * p / d  (+ dh),  dw = sum_rows dy*x*r
 *
 * dw is summed per thread in float64 (no atomics, and no float32 rounding growing with the row
 * count), then the threads' sums are added in a fixed order into the float32 dw.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef BLOCKLAB_MVEC
/* glibc's libmvec has SIMD expf/erff; math.h declares them only under -ffast-math, which would
 * also license reassociating the sums below, so declare them here instead. */
__attribute__((__simd__("notinbranch"))) float expf(float);
__attribute__((__simd__("notinbranch"))) float erff(float);
#endif

/* Sums run in LANES fixed partial sums, combined in a fixed order, so a row's result does not
 * depend on where the row sits in memory (a compiler-vectorised reduction may peel a few
 * elements to align its loads, which changes the rounding with the row's address). */
#define LANES 16

static inline float combine(const float *acc) {
    float total = 0.0f;
    for (int k = 0; k < LANES; ++k) total += acc[k];
    return total;
}

#ifdef _OPENMP
extern int omp_get_thread_num(void);
extern int omp_get_num_threads(void);
#endif

/* The rows [lo, hi) of the calling thread's share of n, in a parallel region. */
static inline void my_rows(long n, long *lo, long *hi) {
#ifdef _OPENMP
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    int t = 0, nt = 1;
#endif
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

/* dw's per-thread float64 partial sums, threads x d zeroed; NULL when dw is NULL or memory ran
 * out (the caller tells them apart by dw). */
static double *dw_scratch(const float *dw, int threads, long d) {
    return dw ? calloc((size_t)threads * (size_t)d, sizeof(double)) : NULL;
}

/* The calling thread's row of the partial sums, or NULL without them. */
static inline double *my_part(double *part, long d) {
#ifdef _OPENMP
    return part ? part + (long)omp_get_thread_num() * d : NULL;
#else
    return part;
#endif
}

/* dw = the threads' partial sums added in a fixed thread order; frees them. */
static void dw_reduce(double *part, float *dw, int threads, long d) {
    if (!dw) return;
    for (long j = 0; j < d; ++j) {
        double total = 0.0;
        for (int t = 0; t < threads; ++t) total += part[(long)t * d + j];
        dw[j] = (float)total;
    }
    free(part);
}

static inline float row_sumsq(const float *restrict x, long d) {
    float acc[LANES] = {0};
    long j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int k = 0; k < LANES; ++k) acc[k] += x[j + k] * x[j + k];
    for (int k = 0; j < d; ++j, ++k) acc[k] += x[j] * x[j];
    return combine(acc);
}

/* sum_j a[j] * b[j] * c[j], or with (1 + b[j]) when unit_offset. */
static inline float row_dot3(const float *restrict a, const float *restrict b,
                             const float *restrict c, long d, int unit_offset) {
    float acc[LANES] = {0};
    float off = unit_offset ? 1.0f : 0.0f;
    long j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int k = 0; k < LANES; ++k) acc[k] += a[j + k] * (off + b[j + k]) * c[j + k];
    for (int k = 0; j < d; ++j, ++k) acc[k] += a[j] * (off + b[j]) * c[j];
    return combine(acc);
}

/* h = x + res (when res != NULL, written to h), y = RMSNorm(h); rinv[i] = 1/s of row i. */
void blocklab_rms_forward(const float *x, const float *res, float *h, const float *w, float *y,
                          float *rinv, long n, long d, float eps, int unit_offset, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const float *xi = x + i * d;
        float *yi = y + i * d;
        if (res) {
            const float *ri = res + i * d;
            float *hi = h + i * d;
#pragma omp simd
            for (long j = 0; j < d; ++j) hi[j] = xi[j] + ri[j];
            xi = hi;  /* still in cache for the sum and the scaling below */
        }
        float ss = row_sumsq(xi, d);
        float r = 1.0f / sqrtf(ss / (float)d + eps);
        rinv[i] = r;
        if (unit_offset) {
#pragma omp simd
            for (long j = 0; j < d; ++j) yi[j] = (xi[j] * r) * (1.0f + w[j]);
        } else {
#pragma omp simd
            for (long j = 0; j < d; ++j) yi[j] = (xi[j] * r) * w[j];
        }
    }
}

/* dx = d/dx of RMSNorm (+ dh when dh != NULL); dw = sum over rows of dy * x * r (dw may be
 * NULL when the gain needs no gradient). Returns 0, or -1 when scratch memory ran out. */
int blocklab_rms_backward(const float *dy, const float *x, const float *rinv, const float *w,
                          const float *dh, float *dx, float *dw, long n, long d,
                          int unit_offset, int threads) {
    if (threads < 1) threads = 1;
    double *dw_part = dw_scratch(dw, threads, d);
    if (dw && !dw_part) return -1;
#pragma omp parallel num_threads(threads)
    {
        long lo, hi;
        my_rows(n, &lo, &hi);
        double *dwt = my_part(dw_part, d);
        for (long i = lo; i < hi; ++i) {
            const float *gi = dy + i * d, *xi = x + i * d;
            float *dxi = dx + i * d;
            float r = rinv[i];
            float p = row_dot3(gi, w, xi, d, unit_offset);
            float c = r * r * r * p / (float)d;
            if (unit_offset) {
#pragma omp simd
                for (long j = 0; j < d; ++j) dxi[j] = r * gi[j] * (1.0f + w[j]) - xi[j] * c;
            } else {
#pragma omp simd
                for (long j = 0; j < d; ++j) dxi[j] = r * gi[j] * w[j] - xi[j] * c;
            }
            if (dh) {
                const float *hi_ = dh + i * d;
#pragma omp simd
                for (long j = 0; j < d; ++j) dxi[j] += hi_[j];
            }
            if (dwt) {
#pragma omp simd
                for (long j = 0; j < d; ++j) dwt[j] += (double)(gi[j] * xi[j]) * r;
            }
        }
    }
    dw_reduce(dw_part, dw, threads, d);
    return 0;
}

/* Gated activations y = phi(gate) * up, phi = SiLU (ACT_SILU) or exact GELU (ACT_GELU).
 * gate and up are [n, m] with row strides sg and su (views into one gate_up output work);
 * y, dgate and dup are contiguous [n, m]. Each activation has its own loop; a code without one
 * returns -1 before anything is written, so no activation is ever computed as another. */
#define SQRT_HALF 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f
enum { ACT_SILU = 0, ACT_GELU = 1, N_ACTIVATIONS = 2 };

int blocklab_gated_forward(const float *gate, long sg, const float *up, long su, float *y,
                           long n, long m, int act, int threads) {
    if (act < 0 || act >= N_ACTIVATIONS) return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const float *z = gate + i * sg, *u = up + i * su;
        float *yi = y + i * m;
        if (act == ACT_SILU) {
#pragma omp simd
            for (long j = 0; j < m; ++j) yi[j] = z[j] / (1.0f + expf(-z[j])) * u[j];
        } else if (act == ACT_GELU) {
#pragma omp simd
            for (long j = 0; j < m; ++j)
                yi[j] = z[j] * (0.5f * (1.0f + erff(z[j] * SQRT_HALF))) * u[j];
        }
    }
    return 0;
}

/* dgate = dy * up * phi'(gate), dup = dy * phi(gate); either may be NULL. Returns 0, or -1 for
 * an activation code without code here. */
int blocklab_gated_backward(const float *dy, const float *gate, long sg, const float *up,
                            long su, float *dgate, float *dup, long n, long m, int act,
                            int threads) {
    if (act < 0 || act >= N_ACTIVATIONS) return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const float *g = dy + i * m, *z = gate + i * sg, *u = up + i * su;
        float *dz = dgate ? dgate + i * m : NULL, *du = dup ? dup + i * m : NULL;
        if (act == ACT_SILU) {
#pragma omp simd
            for (long j = 0; j < m; ++j) {
                float s = 1.0f / (1.0f + expf(-z[j]));
                if (du) du[j] = g[j] * (z[j] * s);
                if (dz) dz[j] = g[j] * u[j] * (s * (1.0f + z[j] * (1.0f - s)));
            }
        } else if (act == ACT_GELU) {
#pragma omp simd
            for (long j = 0; j < m; ++j) {
                float cdf = 0.5f * (1.0f + erff(z[j] * SQRT_HALF));
                if (du) du[j] = g[j] * (z[j] * cdf);
                if (dz) dz[j] = g[j] * u[j] * (cdf + z[j] * expf(-0.5f * z[j] * z[j]) * INV_SQRT_2PI);
            }
        }
    }
    return 0;
}

/* Half-split RoPE of x [B, H, T, hd] (strides sb, sh, st; last axis contiguous) by cos, sin
 * [B or 1, T, r] (strides cb, ct; cb = 0 broadcasts), r = 2 * half <= hd, into contiguous out:
 *   out1 = x1*c1 - x2*s1, out2 = x2*c2 + x1*s2          (inverse = 0)
 *   out1 = x1*c1 + x2*s2, out2 = x2*c2 - x1*s1          (inverse = 1: the transpose, for grads)
 * Channels past r are copied. Each product is rounded before the sum (no FMA contraction
 * under -std=c11), as PyTorch's separate multiply and add kernels round. */
void blocklab_rope(const float *x, long sb, long sh, long st, const float *cos_, const float *sin_,
                   long cb, long ct, float *out, long B, long H, long T, long hd, long half,
                   int inverse, int threads) {
    long n = B * H * T;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        long t = i % T, h = (i / T) % H, b = i / (T * H);
        const float *xi = x + b * sb + h * sh + t * st;
        const float *c = cos_ + b * cb + t * ct, *s = sin_ + b * cb + t * ct;
        float *o = out + i * hd;
        if (inverse) {
#pragma omp simd
            for (long j = 0; j < half; ++j) {
                o[j] = xi[j] * c[j] + xi[half + j] * s[half + j];
                o[half + j] = xi[half + j] * c[half + j] - xi[j] * s[j];
            }
        } else {
#pragma omp simd
            for (long j = 0; j < half; ++j) {
                o[j] = xi[j] * c[j] - xi[half + j] * s[j];
                o[half + j] = xi[half + j] * c[half + j] + xi[j] * s[half + j];
            }
        }
        for (long j = 2 * half; j < hd; ++j) o[j] = xi[j];
    }
}

/* --- bfloat16 RMSNorm ------------------------------------------------------------------------
 * bfloat16 tensors arrive as their 16-bit patterns (uint16_t). Each value is widened exactly
 * to float32 (the pattern in the high half), the row is worked on in float32, and each output
 * is rounded once to nearest-even, as PyTorch rounds a float32 result to bfloat16 (NaN to a
 * quiet NaN). The rounding points follow blocklab.nn.norm's reference in bfloat16:
 *
 *   h = bf16(x + res)                                   (PyTorch's bfloat16 add)
 *   r = 1 / sqrt(mean(h^2) + eps)                        (float32, LANES partial sums)
 *   llama: y = bf16(g * bf16(h * r))     gemma: y = bf16((h * r) * g)
 *
 * g is the float32 gain with any unit offset already applied the way the cast order applies
 * it (the caller computes it). Backward, in float32 from the bfloat16 inputs, rounded once:
 *   p = sum_j dy*g*h,  dx = bf16(r*dy*g - h * r^3 * p / d (+ dh))
 *   dw = sum_rows dy * bf16(h*r) (llama: the gain multiplied the rounded value) or dy*h*r.
 */
static inline float from_bf16(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? 0x7fc0u : rounded);
}

static inline float row_sumsq_bf16(const uint16_t *restrict x, long d) {
    float acc[LANES] = {0};
    long j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int k = 0; k < LANES; ++k) {
            float v = from_bf16(x[j + k]);
            acc[k] += v * v;
        }
    for (int k = 0; j < d; ++j, ++k) {
        float v = from_bf16(x[j]);
        acc[k] += v * v;
    }
    return combine(acc);
}

/* sum_j a[j] * g[j] * b[j] over bfloat16 a, b and float32 g. */
static inline float row_dot3_bf16(const uint16_t *restrict a, const float *restrict g,
                                  const uint16_t *restrict b, long d) {
    float acc[LANES] = {0};
    long j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int k = 0; k < LANES; ++k)
            acc[k] += from_bf16(a[j + k]) * g[j + k] * from_bf16(b[j + k]);
    for (int k = 0; j < d; ++j, ++k) acc[k] += from_bf16(a[j]) * g[j] * from_bf16(b[j]);
    return combine(acc);
}

void blocklab_rms_forward_bf16(const uint16_t *x, const uint16_t *res, uint16_t *h,
                               const float *g, uint16_t *y, float *rinv, long n, long d,
                               float eps, int gemma, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const uint16_t *xi = x + i * d;
        uint16_t *yi = y + i * d;
        if (res) {
            const uint16_t *ri = res + i * d;
            uint16_t *hi = h + i * d;
#pragma omp simd
            for (long j = 0; j < d; ++j) hi[j] = to_bf16(from_bf16(xi[j]) + from_bf16(ri[j]));
            xi = hi;
        }
        float r = 1.0f / sqrtf(row_sumsq_bf16(xi, d) / (float)d + eps);
        rinv[i] = r;
        if (gemma) {
#pragma omp simd
            for (long j = 0; j < d; ++j) yi[j] = to_bf16((from_bf16(xi[j]) * r) * g[j]);
        } else {
#pragma omp simd
            for (long j = 0; j < d; ++j)
                yi[j] = to_bf16(g[j] * from_bf16(to_bf16(from_bf16(xi[j]) * r)));
        }
    }
}

/* Returns 0, or -1 when scratch memory ran out. dh and dw may be NULL. */
int blocklab_rms_backward_bf16(const uint16_t *dy, const uint16_t *x, const float *rinv,
                               const float *g, const uint16_t *dh, uint16_t *dx, float *dw,
                               long n, long d, int gemma, int threads) {
    if (threads < 1) threads = 1;
    double *dw_part = dw_scratch(dw, threads, d);
    if (dw && !dw_part) return -1;
#pragma omp parallel num_threads(threads)
    {
        long lo, hi;
        my_rows(n, &lo, &hi);
        double *dwt = my_part(dw_part, d);
        for (long i = lo; i < hi; ++i) {
            const uint16_t *gi = dy + i * d, *xi = x + i * d;
            uint16_t *dxi = dx + i * d;
            float r = rinv[i];
            float c = r * r * r * row_dot3_bf16(gi, g, xi, d) / (float)d;
            if (dh) {
                const uint16_t *hi_ = dh + i * d;
#pragma omp simd
                for (long j = 0; j < d; ++j)
                    dxi[j] = to_bf16(r * from_bf16(gi[j]) * g[j] - from_bf16(xi[j]) * c
                                     + from_bf16(hi_[j]));
            } else {
#pragma omp simd
                for (long j = 0; j < d; ++j)
                    dxi[j] = to_bf16(r * from_bf16(gi[j]) * g[j] - from_bf16(xi[j]) * c);
            }
            if (dwt) {
                if (gemma) {
#pragma omp simd
                    for (long j = 0; j < d; ++j)
                        dwt[j] += (double)(from_bf16(gi[j]) * from_bf16(xi[j])) * r;
                } else {
#pragma omp simd
                    for (long j = 0; j < d; ++j)
                        dwt[j] += (double)(from_bf16(gi[j])
                                           * from_bf16(to_bf16(from_bf16(xi[j]) * r)));
                }
            }
        }
    }
    dw_reduce(dw_part, dw, threads, d);
    return 0;
}

/* --- bfloat16 RoPE ---------------------------------------------------------------------------
 * blocklab_rope on bfloat16 x and out (cos and sin float32): each element widened exactly, the
 * rotation computed in float32 as blocklab_rope computes it, rounded once, as the reference
 * rotates in float32 and casts back; channels past r copied bit for bit. */
void blocklab_rope_bf16(const uint16_t *x, long sb, long sh, long st, const float *cos_,
                        const float *sin_, long cb, long ct, uint16_t *out, long B, long H,
                        long T, long hd, long half, int inverse, int threads) {
    long n = B * H * T;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        long t = i % T, h = (i / T) % H, b = i / (T * H);
        const uint16_t *xi = x + b * sb + h * sh + t * st;
        const float *c = cos_ + b * cb + t * ct, *s = sin_ + b * cb + t * ct;
        uint16_t *o = out + i * hd;
        if (inverse) {
#pragma omp simd
            for (long j = 0; j < half; ++j) {
                float x1 = from_bf16(xi[j]), x2 = from_bf16(xi[half + j]);
                o[j] = to_bf16(x1 * c[j] + x2 * s[half + j]);
                o[half + j] = to_bf16(x2 * c[half + j] - x1 * s[j]);
            }
        } else {
#pragma omp simd
            for (long j = 0; j < half; ++j) {
                float x1 = from_bf16(xi[j]), x2 = from_bf16(xi[half + j]);
                o[j] = to_bf16(x1 * c[j] - x2 * s[j]);
                o[half + j] = to_bf16(x2 * c[half + j] + x1 * s[half + j]);
            }
        }
        for (long j = 2 * half; j < hd; ++j) o[j] = xi[j];
    }
}

/* --- bfloat16 gated activations ----------------------------------------------------------------
 * The reference `phi(gate) * up` in bfloat16 rounds phi's output, then the product; its
 * gradient rounds dy * phi (d_up), dy * up, and phi's backward applied to that (d_gate). Each
 * of those roundings is made here, in the same order, from float32 arithmetic. */
static inline float phi(float z, int act) {
    return act == ACT_SILU ? z / (1.0f + expf(-z)) : z * (0.5f * (1.0f + erff(z * SQRT_HALF)));
}

int blocklab_gated_forward_bf16(const uint16_t *gate, long sg, const uint16_t *up, long su,
                                uint16_t *y, long n, long m, int act, int threads) {
    if (act < 0 || act >= N_ACTIVATIONS) return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const uint16_t *z = gate + i * sg, *u = up + i * su;
        uint16_t *yi = y + i * m;
        if (act == ACT_SILU) {
#pragma omp simd
            for (long j = 0; j < m; ++j)
                yi[j] = to_bf16(from_bf16(to_bf16(phi(from_bf16(z[j]), ACT_SILU)))
                                * from_bf16(u[j]));
        } else if (act == ACT_GELU) {
#pragma omp simd
            for (long j = 0; j < m; ++j)
                yi[j] = to_bf16(from_bf16(to_bf16(phi(from_bf16(z[j]), ACT_GELU)))
                                * from_bf16(u[j]));
        }
    }
    return 0;
}

int blocklab_gated_backward_bf16(const uint16_t *dy, const uint16_t *gate, long sg,
                                 const uint16_t *up, long su, uint16_t *dgate, uint16_t *dup,
                                 long n, long m, int act, int threads) {
    if (act < 0 || act >= N_ACTIVATIONS) return -1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; ++i) {
        const uint16_t *g = dy + i * m, *z = gate + i * sg, *u = up + i * su;
        uint16_t *dz = dgate ? dgate + i * m : NULL, *du = dup ? dup + i * m : NULL;
        if (act == ACT_SILU) {
#pragma omp simd
            for (long j = 0; j < m; ++j) {
                float zj = from_bf16(z[j]), gj = from_bf16(g[j]);
                float s = 1.0f / (1.0f + expf(-zj));
                if (du) du[j] = to_bf16(gj * from_bf16(to_bf16(zj * s)));
                if (dz) dz[j] = to_bf16(from_bf16(to_bf16(gj * from_bf16(u[j])))
                                        * (s * (1.0f + zj * (1.0f - s))));
            }
        } else if (act == ACT_GELU) {
#pragma omp simd
            for (long j = 0; j < m; ++j) {
                float zj = from_bf16(z[j]), gj = from_bf16(g[j]);
                float cdf = 0.5f * (1.0f + erff(zj * SQRT_HALF));
                if (du) du[j] = to_bf16(gj * from_bf16(to_bf16(zj * cdf)));
                if (dz) dz[j] = to_bf16(from_bf16(to_bf16(gj * from_bf16(u[j])))
                                        * (cdf + zj * expf(-0.5f * zj * zj) * INV_SQRT_2PI));
            }
        }
    }
    return 0;
}
