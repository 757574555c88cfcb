/*
 * gorstar_kernels.h — the one header of the kernel bridge.
 *
 * Every op is a plain C function over raw pointers and sizes. Go decides the order of calls and
 * owns the buffers; C never calls back into Go. The CPU implementation (C + OpenMP) and the ROCm
 * implementation (HIP, build tag `rocm`) implement this same header. Pointers to float data are
 * device pointers obtained from gk_alloc (host memory on the CPU backend).
 *
 * Conventions
 *   - Row-major. Activations are [T, C] with T = tokens (batch * sequence), weights follow Hugging
 *     Face: a linear layer's weight is [out, in].
 *   - Backward functions ADD into every gradient buffer they are given (llm.c style), so gradient
 *     accumulation over micro-batches and residual branches needs no extra op; the caller zeroes.
 *     A NULL gradient pointer means "not needed".
 *   - Token ids and positions are int32. A target of -1 is ignored (weight 0, logprob 0).
 *   - Results are deterministic for a fixed thread count (static work split, fixed reduction order).
 */
#ifndef GORSTAR_KERNELS_H
#define GORSTAR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- runtime ---------------------------------------------------------------------------- */
const char *gk_backend_name(void);          /* "cpu-avx512", "cpu-avx2", "cpu-generic", "rocm-gfx90a", ... */
int gk_init(int device, int threads);       /* 0 on success; threads <= 0 means all cores */
int gk_threads(void);                       /* the thread count gk_init chose */
const char *gk_last_error(void);            /* message of the last failure, "" if none */
void *gk_alloc(size_t bytes);               /* 64-byte aligned, NULL on failure */
void gk_free(void *p);
void gk_memset_zero(void *p, size_t bytes);
void gk_copy_to_device(void *dst, const void *src_host, size_t bytes);
void gk_copy_to_host(void *dst_host, const void *src, size_t bytes);
void gk_copy_device(void *dst, const void *src, size_t bytes);
void gk_synchronize(void);

/* ---- matmul (matmul.c) ------------------------------------------------------------------ */
/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose when trans != 0. */
void gk_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);
/* y[T,out] = x[T,in] * W[out,in]^T + b[out] (b may be NULL). */
void gk_linear_forward(float *y, const float *x, const float *W, const float *b, int T, int in, int out);
/* Weights prepared once for many gk_linear_forward calls (decoding, where each call has few rows and
 * repacking W would cost as much as the product): Wp holds gk_linear_packed_floats(in, out) floats
 * filled by gk_linear_pack. gk_linear_forward_packed gives bit-identical results to
 * gk_linear_forward with W; it needs W too (few rows read W in place). Wp is tied to the SGEMM
 * kernel that packed it (with another, W is used unpacked) and to W's values: pack again after W changes. */
long gk_linear_packed_floats(int in, int out);
void gk_linear_pack(float *Wp, const float *W, int in, int out);
void gk_linear_forward_packed(float *y, const float *x, const float *W, const float *Wp, const float *b, int T, int in,
                              int out);
/* ys[i][T,outs[i]] = x[T,in] * Ws[i]^T + bs[i], i < n (n <= 4; bs[i] may be NULL): several
 * gk_linear_forward_packed of one input (q, k and v; gate and up) in one parallel region with x
 * packed once; the same bits as the calls one by one. */
void gk_linear_forward_packed_multi(int n, float *const *ys, const float *x, const float *const *Ws,
                                    const float *const *Wps, const float *const *bs, int T, int in, const int *outs);
/* dx[T,in] += dy*W ; dW[out,in] += dy^T*x ; db[out] += sum_t dy  (any of dx, dW, db may be NULL). */
void gk_linear_backward(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                        int T, int in, int out);

/* ---- normalization (rmsnorm.c) ---------------------------------------------------------- */
/* y = w * x / sqrt(mean(x^2) + eps) per row of C; rstd[T] saved for backward (may be NULL). */
void gk_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int T, int C, float eps);
void gk_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rstd, int T, int C);

/* ---- rotary embedding (rope.c), Hugging Face "rotate half" -------------------------------- */
/* x[T, heads, head_dim] rotated in place by the angle pos[t] * theta^(-2i/head_dim). */
void gk_rope_forward(float *x, const int32_t *pos, int T, int heads, int head_dim, float theta);
/* dx in place: the inverse rotation (the transpose) of the forward. */
void gk_rope_backward(float *dx, const int32_t *pos, int T, int heads, int head_dim, float theta);
/* The forward's angles of rows with positions pos: cs[T, head_dim], cos in the first half of each
 * row, sin in the second. gk_rope_apply(x, cs, ...) is gk_rope_forward(x, pos, ...), bit for bit. */
void gk_rope_table(float *cs, const int32_t *pos, int T, int head_dim, float theta);
void gk_rope_apply(float *x, const float *cs, int T, int heads, int head_dim);

/* ---- attention (attention.c): causal, grouped-query, tiled (O(L) extra memory) ----------- */
/* q[B, Lq, nh, hd]; k, v[B, Lk, nkv, hd] with Lq <= Lk: query i sits at key position Lk-Lq+i and
 * sees keys 0..Lk-Lq+i. out[B, Lq, nh, hd]; lse[B, nh, Lq] (log-sum-exp of the scaled scores,
 * saved for backward, may be NULL). nh must be a multiple of nkv.
 *
 * Document masking (several sequences packed into one row): doc_start[B, Lk] (may be NULL: one
 * document per row, plain causal) gives for key position p of row b the position where p's
 * document begins, so the query at p sees keys doc_start[b, p]..p only. Documents are contiguous:
 * doc_start[b, 0] = 0 and doc_start[b, p] is p (a new document) or doc_start[b, p-1]. Pairs across
 * documents cost nothing: tiles are cut at document boundaries and only tiles inside one document
 * are computed. Values outside [0, p] are clamped (memory-safe, but the result is then undefined).
 * With every entry 0 the result is the same bits as with NULL. */
void gk_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                          const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd, float scale);
void gk_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                           const float *k, const float *v, const float *out, const float *lse,
                           const int32_t *doc_start, int B, int Lq, int Lk, int nh, int nkv, int hd,
                           float scale);
/* One decode step for nseq sequences, each with one new query token and its own cache
 * (attention_decode.c). q and out are [nseq, nh, hd]. k_caches[s] and v_caches[s] (device
 * pointers, in host arrays of nseq entries) are [capacity, nkv, hd] with kv_lens[s] >= 1 valid rows
 * (a host array); the query sits at position kv_lens[s]-1 and sees every row. When k_new / v_new
 * ([nseq, nkv, hd]) are not NULL, they are first written into row kv_lens[s]-1 of each cache. The same
 * bits as gk_attention_forward with B = 1, Lq = 1, Lk = kv_lens[s] per sequence (CPU). shared (a host
 * array, or NULL) says shared[s] leading rows of cache s hold the same bits as those of cache s-1
 * (shared[0] is ignored): the CPU reads such rows once for a run of sequences; the result is the
 * same. k_tiles (a host array, or NULL) gives each cache's key tiles (gk_pack_key_tiles' layout,
 * holding rows 0..kv_lens[s]-2): the CPU reads the keys from them instead of transposing the
 * cache's rows, and writes k_new into them too; ROCm ignores them. kv_dt (CPU) is GK_F32 or GK_BF16:
 * the element type of every cache and tile array (k_new and v_new are rounded to bf16, nearest even,
 * as they are stored; the values are widened exactly as they are read, so the result is that of
 * float32 caches holding the rounded values). */
void gk_attention_decode(float *out, const float *q, const float *k_new, const float *v_new,
                         void *const *k_caches, void *const *v_caches, void *const *k_tiles,
                         const int32_t *kv_lens, const int32_t *shared, int nseq, int nh, int nkv, int hd,
                         float scale, int kv_dt);
/* Rows from..to-1 of a cache's keys ([capacity, ld]) into its key tiles: blocks of 8 rows,
 * transposed, tiles[p / 8][i][p % 8] = keys[p][i] (attention_decode.c); and for bf16 keys and tiles. */
void gk_pack_key_tiles(float *tiles, const float *keys, int from, int to, int ld);
void gk_pack_key_tiles_bf16(uint16_t *tiles, const uint16_t *keys, int from, int to, int ld);

/* ---- activations (swiglu.c) -------------------------------------------------------------- */
/* out = silu(gate) * up, elementwise over n. */
void gk_swiglu_forward(float *out, const float *gate, const float *up, size_t n);
/* dgate and dup (either NULL) written, not added to. */
void gk_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                        size_t n);
/* y += x (residual add) and y = a * y over n elements. */
void gk_add(float *y, const float *x, size_t n);
void gk_scale(float *y, float a, size_t n);

/* ---- embedding (embedding.c) ------------------------------------------------------------- */
void gk_embedding_forward(float *out, const int32_t *ids, const float *table, int T, int C);
void gk_embedding_backward(float *dtable, const float *dout, const int32_t *ids, int T, int C);

/* ---- loss (crossentropy.c) --------------------------------------------------------------- */
/* For each row t of logits[T,V]: logprob[t] = log softmax(logits[t])[target[t]] (0 when target is
 * -1). Returns loss = -sum_t weight[t] * logprob[t] (weights NULL means all 1). When dlogits is not
 * NULL it is WRITTEN (not added) with d loss / d logits = weight[t] * (softmax - onehot); dlogits may
 * alias logits. logprob may be NULL. */
double gk_softmax_xent(float *logprob, float *dlogits, const float *logits, const int32_t *target,
                       const float *weight, int T, int V);

/* ---- optimizer (adamw.c) ----------------------------------------------------------------- */
/* Sum of squares of x (double accumulation, fixed order) for global gradient-norm clipping. */
double gk_sum_squares(const float *x, size_t n);
/* One AdamW step with decoupled weight decay; the gradient is multiplied by grad_scale first
 * (clipping). step counts from 1 (bias correction). */
void gk_adamw(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
              float beta2, float eps, float weight_decay, float grad_scale, int step);

/* ---- bf16 (bf16.c, gemm_bf16.c) -------------------------------------------------------- */
/* bf16 values are uint16_t: the top half of a float32's bits. Element types of mixed-dtype
 * arguments: */
enum { GK_F32 = 0, GK_BF16 = 1 };
/* dst[i] = src[i] rounded to the nearest bf16, ties to even (NaN stays NaN, quiet); and back
 * (exact). */
void gk_bf16_from_f32(uint16_t *dst, const float *src, size_t n);
void gk_bf16_to_f32(float *dst, const uint16_t *src, size_t n);
/* x[i] = x[i] rounded to the nearest bf16 (ties to even) and widened back: in place. */
void gk_bf16_round_f32(float *x, size_t n);
/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C in bf16 arithmetic: every element of A and B
 * (each stored as GK_F32 or GK_BF16, by a_dt and b_dt) rounded to bf16, products summed in fp32;
 * C is GK_F32 or GK_BF16 (c_dt; a bf16 C is rounded once, at the end). The same bits for any thread
 * count. CPUs with AVX-512 BF16 multiply with vdpbf16ps; others widen the bf16 values to fp32 in
 * the packed panels and run the SGEMM microkernel, in the same order (the same bits but for
 * subnormal values, which vdpbf16ps takes as zero). */
void gk_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int a_dt, int lda,
                  const void *B, int b_dt, int ldb, float beta, void *C, int c_dt, int ldc);
/* gk_linear_forward and gk_linear_backward with the products in bf16 arithmetic (gk_gemm_bf16):
 * W[out,in] is bf16; x, y, dy, dx, dW, b and db are fp32 (x and dy rounded to bf16 as they are packed;
 * db summed in fp32). Every row of y gets the same bits whatever T is. */
void gk_linear_forward_bf16(float *y, const float *x, const uint16_t *W, const float *b, int T, int in, int out);
void gk_linear_backward_bf16(float *dx, float *dW, float *db, const float *dy, const float *x, const uint16_t *W,
                             int T, int in, int out);
/* bf16 weights prepared once for many gk_linear_forward_bf16 calls (decoding): Wp holds
 * gk_linear_bf16_packed_words(in, out) 32-bit words filled by gk_linear_bf16_pack;
 * gk_linear_forward_bf16_packed gives the same bits as gk_linear_forward_bf16 (it reads W when Wp
 * was packed for another kernel). Pack again after W changes. */
long gk_linear_bf16_packed_words(int in, int out);
void gk_linear_bf16_pack(uint32_t *Wp, const uint16_t *W, int in, int out);
void gk_linear_forward_bf16_packed(float *y, const float *x, const uint16_t *W, const uint32_t *Wp, const float *b,
                                   int T, int in, int out);
/* gk_linear_forward_bf16_packed for n (at most 4) products of one input x (q, k and v; gate and up)
 * in one parallel region, x packed once: the same bits as the calls one by one. */
void gk_linear_forward_bf16_packed_multi(int n, float *const *ys, const float *x, const uint16_t *const *Ws,
                                         const uint32_t *const *Wps, const float *const *bs, int T, int in,
                                         const int *outs);
/* One decoder layer of a bf16 decode step over T rows (decode_layer.c): x = layer(x), every row
 * a short input's token (gk_attention_decode's rows), in one parallel region, with the bits of the
 * operations one by one. Weights are packed (gk_linear_bf16_pack); q_raw and k_raw are NULL
 * without q_norm/k_norm; biases may be NULL. Returns -1, having touched nothing, when the packed
 * weights do not suit (another kernel, T over one block): then run the operations one by one. */
typedef struct {
    int T, C, I, nh, nkv, hd;
    float eps, scale;
    float *x, *mid, *q, *k, *v, *q_raw, *k_raw, *att, *gate, *up;
    const float *rope, *in_norm, *post_norm, *q_norm, *k_norm, *bq, *bk, *bv, *bo;
    const uint32_t *wq, *wk, *wv, *wo, *wgate, *wup, *wdown;
    void *const *k_caches, *const *v_caches, *const *k_tiles;
    const int32_t *kv_lens, *shared;
    int kv_dt; /* the caches' element type: GK_F32 or GK_BF16 (gk_attention_decode) */
} gk_decode_layer_args;
int gk_decode_layer_bf16(const gk_decode_layer_args *a);
/* The name of the bf16 GEMM kernel in use ("bf16-avx512", or "f32-" and an SGEMM kernel's name). */
const char *gk_gemm_bf16_kernel(void);

#ifdef __cplusplus
}
#endif
#endif
