"""Triton kernels for this corpus (written for it): a flash-attention forward whose KV loop asks
for automatic warp specialization (`tl.range(..., warp_specialize=True)`, real on sm_100)."""
import triton
import triton.language as tl


@triton.jit
def attn_fwd(q_desc, k_desc, v_desc, o_desc, sm_scale, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             HEAD_DIM: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    q = q_desc.load([off_m, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in tl.range(0, N_CTX, BLOCK_N, warp_specialize=True):
        k = k_desc.load([start_n, 0])
        qk = tl.dot(q, k.T) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_desc.store([off_m, 0], acc.to(tl.float16))
