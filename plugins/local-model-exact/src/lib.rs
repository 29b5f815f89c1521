//! `genkit-local-model`'s Llama forward pass, kept in a crate of its own so
//! that the workspace's dev profile can build just this numeric code
//! optimised (`[profile.dev.package.genkit-local-model-exact]`): unoptimised,
//! a token costs about 20 times as long, while optimising the whole plugin
//! also optimised each of its test binaries, the slowest part of its build.
//! It has no Genkit dependency; `genkit-local-model` is its only user.
//!
//! A Llama forward pass that computes what llama.cpp's CPU backend
//! computes, operation by operation, for files whose weights are Q4_1 or
//! Q8_0 (norms in f32): the same quantization of activations, the same
//! order of additions, the same rounding to f16 in attention.
//!
//! Why: SmolLM2-135M's top logits are often within a few hundredths of each
//! other, and quantizing activations (to 8 bits, before every matrix
//! product) turns tiny differences into whole quantization steps, so two
//! computations of "the same" model that differ in rounding choose
//! different tokens after a few steps. candle's quantized Llama differs
//! from llama.cpp in several such places (it rounds Q8_1's block sum `s`
//! through f16 twice, rounds halves away from zero, keeps the KV cache and
//! the attention weights in f32, sums in another order); this module
//! follows llama.cpp (x86-64 build with AVX2/FMA/F16C, the llama-cpp-python
//! 0.3.36 build `tests/fixtures/llama_cpp_reference.py` describes) instead:
//!
//! - activations are quantized per block of 32 like `quantize_row_q8_1` /
//!   `quantize_row_q8_0`: scale `max|x|/127` stored as f16, values
//!   multiplied by `127/max|x|` and rounded half to even, Q8_1's `s` is
//!   `d·Σq` rounded once to f16;
//! - `Q4_1·Q8_1` and `Q8_0·Q8_0` dot products sum 4 integer products per
//!   lane, accumulate 8 lanes with fused multiply-adds across blocks and
//!   reduce the lanes in `hsum_float_8`'s order (Q4_1's `m·s` terms
//!   accumulate separately, fused);
//! - RMSNorm sums squares in f64 and multiplies by `1/sqrt(mean+eps)`;
//! - RoPE (normal, adjacent pairs) uses angles `p·θ^i` built by repeated
//!   multiplication, and contracts `x0·cos − x1·sin` into a fused
//!   multiply-add as GCC does;
//! - attention reads a KV cache in f16, rounds Q and the softmax weights to
//!   f16 (llama.cpp's default F16 cache; its CPU matrix product converts the
//!   other operand to the cache's type), sums `Q·K` and `P·V` as
//!   `ggml_vec_dot_f16` (one token) or llamafile's tinyBLAS (a batch of
//!   prompt tokens) does, and computes softmax with ggml's vectorised
//!   `exp` approximation over blocks of 8, sums in f64;
//! - SiLU is `x/(1+exp(−x))` with the same `exp` approximation.
//!
//! Fused multiply-adds: with the `fma` target feature they are hardware
//! FMAs; without it (the default x86-64 target) they are computed in f64
//! (the product of two f32 is exact there) and rounded to f32, which can
//! differ from a true FMA only when the f64 sum lands exactly halfway
//! between two f32 values (double rounding), a case of about one in 2^29.

use candle_core::quantized::GgmlDType;
use candle_core::quantized::gguf_file::Content;
use half::f16;
use rayon::prelude::*;
use std::io::{Read, Seek};

/// Block length of every supported quantization.
const QK: usize = 32;

/// `a·b + c` rounded once: with the CPU's FMA instruction when `HW`,
/// else through f64 (see the module docs).
#[inline(always)]
fn fma<const HW: bool>(a: f32, b: f32, c: f32) -> f32 {
    if HW {
        a.mul_add(b, c)
    } else {
        (f64::from(a) * f64::from(b) + f64::from(c)) as f32
    }
}

/// Whether code compiled for the build's target has a hardware FMA.
const TARGET_FMA: bool = cfg!(target_feature = "fma");

/// Whether the code `fast!` falls back to has a hardware FMA (outside
/// x86-64 the fallback is never used).
const BASELINE_FMA: bool = TARGET_FMA || cfg!(not(target_arch = "x86_64"));

/// Evaluates `$body` with the const `$hw` (whether `fma` is a hardware
/// FMA) set, compiled for AVX2 and FMA when this x86-64 CPU has them
/// (about ten times faster than the baseline build), else as built.
/// Elsewhere (e.g. aarch64) FMA is part of the baseline.
macro_rules! fast {
    ($hw:ident => $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        let result = match pulp::x86::V3::try_new() {
            Some(simd) => simd.vectorize(|| {
                const $hw: bool = true;
                $body
            }),
            None => {
                const $hw: bool = BASELINE_FMA;
                $body
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        let result = {
            const $hw: bool = true;
            $body
        };
        result
    }};
}

/// ggml's `hsum_float_8` (and tinyBLAS's `hsum`): lanes `i + 4` added to
/// lanes `i`, then `(0 + 2) + (1 + 3)`.
#[inline(always)]
fn hsum8(a: &[f32; 8]) -> f32 {
    let r = [a[4] + a[0], a[5] + a[1], a[6] + a[2], a[7] + a[3]];
    (r[0] + r[2]) + (r[1] + r[3])
}

/// One Q4_1 weight block: `x = d·q + m`, `q` in 0..16.
#[derive(Clone, Copy)]
struct Q4_1 {
    d: f32,
    m: f32,
    qs: [u8; 16],
}

/// One Q8_0 block (weights or activations): `x = d·q`.
#[derive(Clone, Copy)]
struct Q8_0 {
    d: f32,
    qs: [i8; 32],
}

/// One Q8_1 activation block: `x = d·q`, `s = d·Σq` (both f16 values).
#[derive(Clone, Copy)]
struct Q8_1 {
    d: f32,
    s: f32,
    qs: [i8; 32],
}

/// `quantize_row_q8_0`/`_q8_1` for one block: (`max|x|/127` in f32, its
/// f16 value, quants). Plain loops, no closures: the hot kernels are
/// inlined into `fast!`'s AVX2 context, and closures would not be.
#[inline(always)]
fn quantize_block(x: &[f32]) -> (f32, f32, [i8; 32]) {
    let mut amax = 0f32;
    for &v in x {
        amax = amax.max(v.abs());
    }
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut qs = [0i8; 32];
    for (q, &v) in qs.iter_mut().zip(x) {
        *q = (v * id).round_ties_even() as i8;
    }
    (d, f16::from_f32(d).to_f32(), qs)
}

#[inline(always)]
fn quantize_q8_1(x: &[f32]) -> Vec<Q8_1> {
    let mut out = Vec::with_capacity(x.len() / QK);
    for block in x.chunks_exact(QK) {
        let (d32, d, qs) = quantize_block(block);
        let mut sum = 0i32;
        for &q in &qs {
            sum += i32::from(q);
        }
        // `s` from the f32 scale, not the f16 one.
        let s = f16::from_f32(d32 * sum as f32).to_f32();
        out.push(Q8_1 { d, s, qs });
    }
    out
}

#[inline(always)]
fn quantize_q8_0(x: &[f32]) -> Vec<Q8_0> {
    let mut out = Vec::with_capacity(x.len() / QK);
    for block in x.chunks_exact(QK) {
        let (_, d, qs) = quantize_block(block);
        out.push(Q8_0 { d, qs });
    }
    out
}

/// `ggml_vec_dot_q4_1_q8_1` (AVX2).
#[inline(always)]
fn dot_q4_1<const HW: bool>(w: &[Q4_1], x: &[Q8_1]) -> f32 {
    let mut acc = [0f32; 8];
    let mut summs = 0f32;
    for (b, y) in w.iter().zip(x) {
        summs = fma::<HW>(b.m, y.s, summs);
        let d = b.d * y.d;
        let mut lanes = [0i32; 8];
        for j in 0..16 {
            lanes[j / 4] += i32::from(b.qs[j] & 0x0F) * i32::from(y.qs[j]);
            lanes[4 + j / 4] += i32::from(b.qs[j] >> 4) * i32::from(y.qs[16 + j]);
        }
        for (a, &l) in acc.iter_mut().zip(&lanes) {
            *a = fma::<HW>(d, l as f32, *a);
        }
    }
    hsum8(&acc) + summs
}

/// The AVX2 kernels themselves (the same instructions as llama.cpp's), for
/// CPUs that have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Q4_1, Q8_0, Q8_1, hsum8};
    use pulp::x86::V3;
    use std::arch::x86_64::{__m128i, __m256i};

    /// `ggml_vec_dot_q4_1_q8_1`.
    #[inline(always)]
    pub(super) fn dot_q4_1(simd: V3, w: &[Q4_1], x: &[Q8_1]) -> f32 {
        let low = simd.avx._mm256_set1_epi8(0x0F);
        let ones = simd.avx._mm256_set1_epi16(1);
        let mut acc = simd.avx._mm256_setzero_ps();
        let mut summs = 0f32;
        for (b, y) in w.iter().zip(x) {
            summs = b.m.mul_add(y.s, summs);
            let d = simd.avx._mm256_set1_ps(b.d * y.d);
            let q: __m128i = pulp::cast(b.qs);
            let nibbles = simd
                .avx
                ._mm256_set_m128i(simd.sse2._mm_srli_epi16::<4>(q), q);
            let qx = simd.avx2._mm256_and_si256(low, nibbles);
            let qy: __m256i = pulp::cast(y.qs);
            let pairs = simd.avx2._mm256_maddubs_epi16(qx, qy);
            let lanes = simd
                .avx
                ._mm256_cvtepi32_ps(simd.avx2._mm256_madd_epi16(ones, pairs));
            acc = simd.fma._mm256_fmadd_ps(d, lanes, acc);
        }
        hsum8(&pulp::cast(acc)) + summs
    }

    /// `ggml_vec_dot_q8_0_q8_0`.
    #[inline(always)]
    pub(super) fn dot_q8_0(simd: V3, w: &[Q8_0], x: &[Q8_0]) -> f32 {
        let ones = simd.avx._mm256_set1_epi16(1);
        let mut acc = simd.avx._mm256_setzero_ps();
        for (b, y) in w.iter().zip(x) {
            let d = simd.avx._mm256_set1_ps(b.d * y.d);
            let qx: __m256i = pulp::cast(b.qs);
            let qy: __m256i = pulp::cast(y.qs);
            let ax = simd.avx2._mm256_sign_epi8(qx, qx);
            let sy = simd.avx2._mm256_sign_epi8(qy, qx);
            let pairs = simd.avx2._mm256_maddubs_epi16(ax, sy);
            let lanes = simd
                .avx
                ._mm256_cvtepi32_ps(simd.avx2._mm256_madd_epi16(ones, pairs));
            acc = simd.fma._mm256_fmadd_ps(d, lanes, acc);
        }
        hsum8(&pulp::cast(acc))
    }
}

/// `ggml_vec_dot_q8_0_q8_0` (AVX2).
#[inline(always)]
fn dot_q8_0<const HW: bool>(w: &[Q8_0], x: &[Q8_0]) -> f32 {
    let mut acc = [0f32; 8];
    for (b, y) in w.iter().zip(x) {
        let d = b.d * y.d;
        let mut lanes = [0i32; 8];
        for j in 0..32 {
            lanes[j / 4] += i32::from(b.qs[j]) * i32::from(y.qs[j]);
        }
        for (a, &l) in acc.iter_mut().zip(&lanes) {
            *a = fma::<HW>(d, l as f32, *a);
        }
    }
    hsum8(&acc)
}

/// Weight rows `first..` (as many as `out` holds, `xq.len()` values each)
/// times the quantized activations `xq`.
#[inline(always)]
fn rows_of<W, X>(
    blocks: &[W],
    cols: usize,
    first: usize,
    xq: &[Vec<X>],
    out: &mut [f32],
    dot: impl Fn(&[W], &[X]) -> f32,
) {
    let nb = cols / QK;
    for (i, o) in out.chunks_exact_mut(xq.len()).enumerate() {
        let r = first + i;
        let w = &blocks[r * nb..(r + 1) * nb];
        for (v, x) in o.iter_mut().zip(xq) {
            *v = dot(w, x);
        }
    }
}

/// A weight block type and the activation blocks its dot product takes,
/// with that dot product as llama.cpp computes it: the AVX2 kernel and the
/// portable one.
trait WeightBlock: Sync {
    type Activations: Sync;
    fn dot(w: &[Self], x: &[Self::Activations]) -> f32
    where
        Self: Sized;
    #[cfg(target_arch = "x86_64")]
    fn dot_avx2(simd: pulp::x86::V3, w: &[Self], x: &[Self::Activations]) -> f32
    where
        Self: Sized;
}

impl WeightBlock for Q4_1 {
    type Activations = Q8_1;
    #[inline(always)]
    fn dot(w: &[Q4_1], x: &[Q8_1]) -> f32 {
        dot_q4_1::<BASELINE_FMA>(w, x)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn dot_avx2(simd: pulp::x86::V3, w: &[Q4_1], x: &[Q8_1]) -> f32 {
        avx2::dot_q4_1(simd, w, x)
    }
}

impl WeightBlock for Q8_0 {
    type Activations = Q8_0;
    #[inline(always)]
    fn dot(w: &[Q8_0], x: &[Q8_0]) -> f32 {
        dot_q8_0::<BASELINE_FMA>(w, x)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn dot_avx2(simd: pulp::x86::V3, w: &[Q8_0], x: &[Q8_0]) -> f32 {
        avx2::dot_q8_0(simd, w, x)
    }
}

/// Fills `by_row` (weight-row-major, `n` values a row) with the quantized
/// activation rows `xq` times each weight row of `blocks`, in tasks of
/// [`ROWS_PER_TASK`] weight rows, each with the AVX2 kernel when this CPU
/// has it.
#[inline(always)]
fn weight_rows_times<W: WeightBlock>(
    blocks: &[W],
    cols: usize,
    xq: &[Vec<W::Activations>],
    n: usize,
    by_row: &mut [f32],
) {
    by_row
        .par_chunks_mut(ROWS_PER_TASK * n)
        .enumerate()
        .for_each(|(task, out)| {
            let first = task * ROWS_PER_TASK;
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V3::try_new() {
                let dot = |w: &[W], x: &[W::Activations]| W::dot_avx2(simd, w, x);
                return simd.vectorize(|| rows_of(blocks, cols, first, xq, out, dot));
            }
            rows_of(blocks, cols, first, xq, out, W::dot)
        });
}

/// Each row of `x` (`cols` values) quantized.
#[inline(always)]
fn quantize_rows<B>(x: &[f32], cols: usize, quantize: fn(&[f32]) -> Vec<B>) -> Vec<Vec<B>> {
    let mut out = Vec::with_capacity(x.len() / cols);
    for row in x.chunks_exact(cols) {
        out.push(quantize(row));
    }
    out
}

/// A weight matrix of `rows` rows of `cols` values.
enum Matrix {
    Q4_1 {
        rows: usize,
        cols: usize,
        blocks: Vec<Q4_1>,
    },
    Q8_0 {
        rows: usize,
        cols: usize,
        blocks: Vec<Q8_0>,
    },
}

/// Rows of output computed per parallel task.
const ROWS_PER_TASK: usize = 32;

impl Matrix {
    fn rows(&self) -> usize {
        match self {
            Matrix::Q4_1 { rows, .. } | Matrix::Q8_0 { rows, .. } => *rows,
        }
    }

    /// `x` (`n` rows of `cols`) times this matrix transposed: `n` rows of
    /// `rows` values.
    fn matmul(&self, x: &[f32], n: usize) -> Vec<f32> {
        let rows = self.rows();
        // Row-major by weight row first (each task owns its rows), then
        // transposed to token-major.
        let mut by_row = vec![0f32; rows * n];
        match self {
            Matrix::Q4_1 { cols, blocks, .. } => {
                let xq = fast!(_HW => quantize_rows(x, *cols, quantize_q8_1));
                weight_rows_times(blocks, *cols, &xq, n, &mut by_row);
            }
            Matrix::Q8_0 { cols, blocks, .. } => {
                let xq = fast!(_HW => quantize_rows(x, *cols, quantize_q8_0));
                weight_rows_times(blocks, *cols, &xq, n, &mut by_row);
            }
        }
        if n == 1 {
            return by_row;
        }
        let mut out = vec![0f32; rows * n];
        for r in 0..rows {
            for t in 0..n {
                out[t * rows + r] = by_row[r * n + t];
            }
        }
        out
    }

    /// Row `r` dequantized (`ggml_get_rows`).
    fn row(&self, r: usize) -> Vec<f32> {
        match self {
            Matrix::Q4_1 { cols, blocks, .. } => {
                let nb = cols / QK;
                let mut out = vec![0f32; *cols];
                for (b, o) in blocks[r * nb..(r + 1) * nb]
                    .iter()
                    .zip(out.chunks_exact_mut(QK))
                {
                    for j in 0..16 {
                        o[j] = f32::from(b.qs[j] & 0x0F) * b.d + b.m;
                        o[j + 16] = f32::from(b.qs[j] >> 4) * b.d + b.m;
                    }
                }
                out
            }
            Matrix::Q8_0 { cols, blocks, .. } => {
                let nb = cols / QK;
                blocks[r * nb..(r + 1) * nb]
                    .iter()
                    .flat_map(|b| b.qs.map(|q| f32::from(q) * b.d))
                    .collect()
            }
        }
    }
}

/// ggml's vectorised `exp` (`ggml_v_expf`, AVX2 with FMA), one lane.
#[inline(always)]
fn v_expf<const HW: bool>(x: f32) -> f32 {
    let r = f32::from_bits(0x4b40_0000);
    let z = fma::<HW>(x, f32::from_bits(0x3fb8_aa3b), r);
    let n = z - r;
    let b = fma::<HW>(
        -n,
        f32::from_bits(0x35bf_be8e),
        fma::<HW>(-n, f32::from_bits(0x3f31_7200), x),
    );
    let e = z.to_bits() << 23;
    let k = f32::from_bits(e.wrapping_add(1f32.to_bits()));
    let u = b * b;
    let j = fma::<HW>(
        fma::<HW>(
            fma::<HW>(f32::from_bits(0x3c07_2010), b, f32::from_bits(0x3d2b_9f17)),
            u,
            fma::<HW>(f32::from_bits(0x3e2a_af33), b, f32::from_bits(0x3eff_fedb)),
        ),
        u,
        f32::from_bits(0x3f7f_fff6) * b,
    );
    if n.abs() > 126.0 {
        return v_expf_far::<HW>(n, e, j);
    }
    fma::<HW>(k, j, k)
}

/// [`v_expf`] where `|n| > 126` (results near under- or overflow).
#[inline(always)]
fn v_expf_far<const HW: bool>(n: f32, e: u32, j: f32) -> f32 {
    let g: u32 = if n <= 0.0 { 0x8200_0000 } else { 0 };
    let s1 = f32::from_bits(g.wrapping_add(0x7f00_0000));
    let s2 = f32::from_bits(e.wrapping_sub(g));
    if n.abs() > 192.0 {
        s1 * s1
    } else {
        fma::<HW>(s2, j, s2) * s1
    }
}

/// `ggml_vec_swiglu_f32`: `silu(gate)·up`, 8 lanes with [`v_expf`], the
/// rest with libm's `exp`.
fn swiglu(gate: &[f32], up: &[f32]) -> Vec<f32> {
    fast!(HW => swiglu_with::<HW>(gate, up))
}

#[inline(always)]
fn swiglu_with<const HW: bool>(gate: &[f32], up: &[f32]) -> Vec<f32> {
    let vectorised = gate.len() / 8 * 8;
    let mut out = Vec::with_capacity(gate.len());
    for (i, (&x, &g)) in gate.iter().zip(up).enumerate() {
        let e = if i < vectorised {
            v_expf::<HW>(0.0 - x)
        } else {
            (-x).exp()
        };
        out.push(x / (1.0 + e) * g);
    }
    out
}

/// `ggml_rms_norm` fused with the multiplication by its weight.
fn rms_norm(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks_exact(w.len()) {
        let sum: f64 = row.iter().map(|&v| f64::from(v * v)).sum();
        let mean = (sum / row.len() as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        out.extend(row.iter().zip(w).map(|(&v, &w)| v * scale * w));
    }
    out
}

/// `ggml_vec_dot_f16` (AVX2: 4 accumulators of 8 lanes). Values past the
/// shorter slice count as zeros (llama.cpp's masked cache positions).
#[inline(always)]
fn dot_f16_vec<const HW: bool>(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let mut sum = [[0f32; 8]; 4];
    #[inline(always)]
    fn step<const HW: bool>(sum: &mut [[f32; 8]; 4], xc: &[f32], yc: &[f32]) {
        for (j, s) in sum.iter_mut().enumerate() {
            for l in 0..8 {
                s[l] = fma::<HW>(xc[8 * j + l], yc[8 * j + l], s[l]);
            }
        }
    }
    let full = n / 32 * 32;
    for (xc, yc) in x[..full].chunks_exact(32).zip(y[..full].chunks_exact(32)) {
        step::<HW>(&mut sum, xc, yc);
    }
    if full < n {
        let (mut xt, mut yt) = ([0f32; 32], [0f32; 32]);
        xt[..n - full].copy_from_slice(&x[full..]);
        yt[..n - full].copy_from_slice(&y[full..]);
        step::<HW>(&mut sum, &xt, &yt);
    }
    let mut s0 = [0f32; 8];
    for l in 0..8 {
        let a = sum[0][l] + sum[2][l];
        let b = sum[1][l] + sum[3][l];
        s0[l] = a + b;
    }
    let t = [s0[0] + s0[4], s0[1] + s0[5], s0[2] + s0[6], s0[3] + s0[7]];
    (t[0] + t[1]) + (t[2] + t[3])
}

/// tinyBLAS's f16 kernel for one output: one accumulator of 8 lanes.
/// Values past the shorter slice count as zeros.
#[inline(always)]
fn dot_f16_tiny<const HW: bool>(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let mut acc = [0f32; 8];
    let full = n / 8 * 8;
    for (xc, yc) in x[..full].chunks_exact(8).zip(y[..full].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] = fma::<HW>(xc[l], yc[l], acc[l]);
        }
    }
    for l in 0..n - full {
        acc[l] = fma::<HW>(x[full + l], y[full + l], acc[l]);
    }
    hsum8(&acc)
}

/// A value through f16 (round to nearest even) and back.
#[inline]
fn to_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

struct Layer {
    attn_norm: Vec<f32>,
    wq: Matrix,
    wk: Matrix,
    wv: Matrix,
    wo: Matrix,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
}

/// The weights and hyperparameters (shared by all sessions).
pub struct Model {
    embeddings: Matrix,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    /// `None`: the embeddings (tied).
    output: Option<Matrix>,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    eps: f32,
    theta_scale: f32,
}

/// One request's KV cache, values rounded to f16 (held as f32): per layer,
/// the keys position by position (`n_kv_head · head_dim` each) and the
/// values transposed (for each of the `n_kv_head · head_dim` dimensions,
/// its value at each position), as llama.cpp keeps them.
pub struct Cache {
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<Vec<f32>>>,
    len: usize,
}

/// Why a file cannot use this forward pass (it then runs on candle).
pub type Unsupported = String;

fn matrix<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
) -> Result<Matrix, Unsupported> {
    let t = content
        .tensor(reader, name, &candle_core::Device::Cpu)
        .map_err(|e| format!("{name}: {e}"))?;
    let (cols, rows) = match t.shape().dims() {
        [rows, cols] => (*cols, *rows),
        dims => return Err(format!("{name}: shape {dims:?}")),
    };
    if !cols.is_multiple_of(QK) {
        return Err(format!("{name}: {cols} columns"));
    }
    let data = t.data().map_err(|e| format!("{name}: {e}"))?;
    let half = |b: &[u8]| f16::from_le_bytes([b[0], b[1]]).to_f32();
    match t.dtype() {
        GgmlDType::Q4_1 => Ok(Matrix::Q4_1 {
            rows,
            cols,
            blocks: data
                .chunks_exact(20)
                .map(|b| Q4_1 {
                    d: half(&b[0..2]),
                    m: half(&b[2..4]),
                    qs: b[4..20].try_into().expect("16 bytes"),
                })
                .collect(),
        }),
        GgmlDType::Q8_0 => Ok(Matrix::Q8_0 {
            rows,
            cols,
            blocks: data
                .chunks_exact(34)
                .map(|b| Q8_0 {
                    d: half(&b[0..2]),
                    qs: <[u8; 32]>::try_from(&b[2..34])
                        .expect("32 bytes")
                        .map(|q| q as i8),
                })
                .collect(),
        }),
        other => Err(format!("{name}: {other:?}")),
    }
}

fn vector<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
) -> Result<Vec<f32>, Unsupported> {
    let t = content
        .tensor(reader, name, &candle_core::Device::Cpu)
        .map_err(|e| format!("{name}: {e}"))?;
    if t.dtype() != GgmlDType::F32 {
        return Err(format!("{name}: {:?}", t.dtype()));
    }
    let data = t.data().map_err(|e| format!("{name}: {e}"))?;
    Ok(data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl Cache {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Model {
    /// Loads a Llama-architecture file whose matrices are all Q4_1 or
    /// Q8_0, or says why it cannot.
    pub fn from_gguf<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
    ) -> Result<Self, Unsupported> {
        let u32_of = |key: &str| -> Result<usize, Unsupported> {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_u32().ok())
                .map(|v| v as usize)
                .ok_or_else(|| format!("no {key}"))
        };
        let f32_of = |key: &str| content.metadata.get(key).and_then(|v| v.to_f32().ok());
        let supported = |name: &str, types: &[GgmlDType]| {
            content
                .tensor_infos
                .get(name)
                .is_some_and(|t| types.contains(&t.ggml_dtype))
        };
        let matrices = [GgmlDType::Q4_1, GgmlDType::Q8_0];
        let n_layer = u32_of("llama.block_count")?;
        let n_embd = u32_of("llama.embedding_length")?;
        let n_head = u32_of("llama.attention.head_count")?;
        let n_kv_head = u32_of("llama.attention.head_count_kv")?;
        let n_rot = u32_of("llama.rope.dimension_count")?;
        if u32_of("llama.expert_count").unwrap_or(0) > 1 {
            return Err("a mixture of experts".into());
        }
        if n_head == 0 || n_kv_head == 0 || !n_head.is_multiple_of(n_kv_head) {
            return Err(format!("{n_head} heads, {n_kv_head} KV heads"));
        }
        let head_dim = n_embd / n_head;
        if head_dim * n_head != n_embd || n_rot != head_dim || !head_dim.is_multiple_of(32) {
            return Err(format!("head size {head_dim}, {n_rot} rotary dimensions"));
        }
        if content.metadata.contains_key("llama.rope.scaling.type")
            || content.metadata.contains_key("llama.attention.scale")
            || content.tensor_infos.contains_key("rope_freqs.weight")
        {
            return Err("RoPE scaling or an attention scale".into());
        }
        let per_layer = [
            "attn_q",
            "attn_k",
            "attn_v",
            "attn_output",
            "ffn_gate",
            "ffn_up",
            "ffn_down",
        ];
        let mut names = vec!["token_embd.weight".to_owned()];
        if content.tensor_infos.contains_key("output.weight") {
            names.push("output.weight".to_owned());
        }
        for i in 0..n_layer {
            names.extend(per_layer.iter().map(|t| format!("blk.{i}.{t}.weight")));
            if content
                .tensor_infos
                .contains_key(&format!("blk.{i}.attn_q.bias"))
                || content
                    .tensor_infos
                    .contains_key(&format!("blk.{i}.attn_output.bias"))
            {
                return Err("attention biases".into());
            }
        }
        if let Some(name) = names.iter().find(|n| !supported(n, &matrices)) {
            return Err(format!(
                "{name} is {:?}",
                content.tensor_infos.get(name).map(|t| t.ggml_dtype)
            ));
        }
        let eps = f32_of("llama.attention.layer_norm_rms_epsilon").ok_or("no RMS epsilon")?;
        let freq_base = f32_of("llama.rope.freq_base").unwrap_or(10000.0);
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let m =
                |reader: &mut R, t: &str| matrix(content, reader, &format!("blk.{i}.{t}.weight"));
            layers.push(Layer {
                attn_norm: vector(content, reader, &format!("blk.{i}.attn_norm.weight"))?,
                wq: m(reader, "attn_q")?,
                wk: m(reader, "attn_k")?,
                wv: m(reader, "attn_v")?,
                wo: m(reader, "attn_output")?,
                ffn_norm: vector(content, reader, &format!("blk.{i}.ffn_norm.weight"))?,
                gate: m(reader, "ffn_gate")?,
                up: m(reader, "ffn_up")?,
                down: m(reader, "ffn_down")?,
            });
        }
        let output = if content.tensor_infos.contains_key("output.weight") {
            Some(matrix(content, reader, "output.weight")?)
        } else {
            None
        };
        Ok(Self {
            embeddings: matrix(content, reader, "token_embd.weight")?,
            layers,
            output_norm: vector(content, reader, "output_norm.weight")?,
            output,
            n_head,
            n_kv_head,
            head_dim,
            eps,
            theta_scale: freq_base.powf(-2.0 / n_rot as f32),
        })
    }

    /// An empty KV cache.
    pub fn cache(&self) -> Cache {
        Cache {
            keys: vec![Vec::new(); self.layers.len()],
            values: vec![vec![Vec::new(); self.n_kv_head * self.head_dim]; self.layers.len()],
            len: 0,
        }
    }

    /// Rotates `x` (`heads` heads of `head_dim` values) for position `p`
    /// (`ggml_rope_ext`, normal mode).
    fn rope(&self, x: &mut [f32], p: usize) {
        fast!(HW => self.rope_with::<HW>(x, p))
    }

    #[inline(always)]
    fn rope_with<const HW: bool>(&self, x: &mut [f32], p: usize) {
        let half = self.head_dim / 2;
        let mut cos = Vec::with_capacity(half);
        let mut sin = Vec::with_capacity(half);
        let mut theta = p as f32;
        for _ in 0..half {
            cos.push(theta.cos());
            sin.push(theta.sin());
            theta *= self.theta_scale;
        }
        for head in x.chunks_exact_mut(self.head_dim) {
            for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                let (x0, x1) = (pair[0], pair[1]);
                pair[0] = fma::<HW>(x0, cos[i], -(x1 * sin[i]));
                pair[1] = fma::<HW>(x0, sin[i], x1 * cos[i]);
            }
        }
    }

    /// Runs `ids` at positions `cache.len..` and returns the logits after
    /// the last one.
    pub fn forward(&self, cache: &mut Cache, ids: &[u32]) -> Vec<f32> {
        let n = ids.len();
        let n_embd = self.n_head * self.head_dim;
        let kv_dim = self.n_kv_head * self.head_dim;
        let start = cache.len;
        let mut x: Vec<f32> = ids
            .iter()
            .flat_map(|&id| self.embeddings.row(id as usize))
            .collect();
        for (l, layer) in self.layers.iter().enumerate() {
            let h = rms_norm(&x, &layer.attn_norm, self.eps);
            let mut q = layer.wq.matmul(&h, n);
            let mut k = layer.wk.matmul(&h, n);
            let v = layer.wv.matmul(&h, n);
            for t in 0..n {
                self.rope(&mut q[t * n_embd..(t + 1) * n_embd], start + t);
                self.rope(&mut k[t * kv_dim..(t + 1) * kv_dim], start + t);
            }
            cache.keys[l].extend(k.iter().map(|&v| to_f16(v)));
            for (d, column) in cache.values[l].iter_mut().enumerate() {
                column.extend(v.iter().skip(d).step_by(kv_dim).map(|&v| to_f16(v)));
            }
            let attn = self.attention(&q, &cache.keys[l], &cache.values[l], start, n);
            let attn = layer.wo.matmul(&attn, n);
            let ffn_in: Vec<f32> = attn.iter().zip(&x).map(|(a, b)| a + b).collect();
            let h = rms_norm(&ffn_in, &layer.ffn_norm, self.eps);
            let gate = layer.gate.matmul(&h, n);
            let up = layer.up.matmul(&h, n);
            let ffn = layer.down.matmul(&swiglu(&gate, &up), n);
            x = ffn.iter().zip(&ffn_in).map(|(a, b)| a + b).collect();
        }
        cache.len += n;
        let last = &x[(n - 1) * n_embd..];
        let h = rms_norm(last, &self.output_norm, self.eps);
        self.output
            .as_ref()
            .unwrap_or(&self.embeddings)
            .matmul(&h, 1)
    }

    /// Attention of `n` queries (positions `start..start + n`) over the
    /// cache (positions `0..start + n`), as llama.cpp's non-flash path
    /// with an f16 cache computes it.
    fn attention(
        &self,
        q: &[f32],
        keys: &[f32],
        values: &[Vec<f32>],
        start: usize,
        n: usize,
    ) -> Vec<f32> {
        let n_embd = self.n_head * self.head_dim;
        let kv_dim = self.n_kv_head * self.head_dim;
        let group = self.n_head / self.n_kv_head;
        let hd = self.head_dim;
        let batched = n > 1;
        let mut out = vec![0f32; n * n_embd];
        out.par_chunks_mut(hd).enumerate().for_each(|(index, o)| {
            let (t, head) = (index / self.n_head, index % self.n_head);
            let (kvh, visible) = (head / group, start + t + 1);
            let q = &q[t * n_embd + head * hd..][..hd];
            let keys = &keys[kvh * hd..];
            let values = &values[kvh * hd..][..hd];
            fast!(HW => head_attention::<HW>(q, keys, kv_dim, values, visible, batched, o))
        });
        out
    }
}

/// One head's attention for one query over `visible` cached positions
/// (key `j` at `keys[j * stride..][..head_dim]`, `values[d][j]`), written
/// to `out` (`head_dim` values). Plain loops, no closures (see
/// [`quantize_block`]).
#[inline(always)]
fn head_attention<const HW: bool>(
    q: &[f32],
    keys: &[f32],
    stride: usize,
    values: &[Vec<f32>],
    visible: usize,
    batched: bool,
    out: &mut [f32],
) {
    let hd = q.len();
    let scale = 1.0 / (hd as f32).sqrt();
    let mut qh = Vec::with_capacity(hd);
    for &v in q {
        qh.push(to_f16(v));
    }
    // llama.cpp pads the cache view to 256 positions; masked positions
    // weigh exactly 0, so padding softmax to its blocks of 8 is the same.
    let mut w = vec![f32::NEG_INFINITY; visible.div_ceil(8) * 8];
    for (j, wj) in w.iter_mut().enumerate().take(visible) {
        let k = &keys[j * stride..][..hd];
        // One token: ggml's vector dot product; a batch: tinyBLAS.
        let s = if batched {
            dot_f16_tiny::<HW>(k, &qh)
        } else {
            dot_f16_vec::<HW>(k, &qh)
        };
        *wj = s * scale;
    }
    let mut max = f32::NEG_INFINITY;
    for &v in &w {
        if v > max {
            max = v;
        }
    }
    let mut sum = 0f64;
    for block in w.chunks_exact_mut(8) {
        let mut e = [0f32; 8];
        for (ei, wi) in e.iter_mut().zip(block.iter_mut()) {
            *ei = v_expf::<HW>(*wi - max);
            *wi = *ei;
        }
        sum += f64::from(hsum8(&e));
    }
    let inv = (1.0 / sum) as f32;
    let mut p = Vec::with_capacity(visible);
    for &v in &w[..visible] {
        p.push(to_f16(v * inv));
    }
    for (od, column) in out.iter_mut().zip(values) {
        *od = if batched {
            dot_f16_tiny::<HW>(column, &p)
        } else {
            dot_f16_vec::<HW>(column, &p)
        };
    }
}
