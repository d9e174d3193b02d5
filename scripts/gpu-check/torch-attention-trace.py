"""PyTorch's CUDNN_ATTENTION on one small problem, non-causal then causal: run it under
CUDNN_LOGLEVEL_DBG=3 (and CUDNN_FRONTEND_LOG_INFO=1) to have cuDNN log the graph PyTorch's
cudnn-frontend builds, attribute by attribute, for comparison with attention-probe.ts."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

for causal in (False, True):
    q, k, v = (torch.randn(1, 2, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    torch.cuda.synchronize()
    print(f"torch cudnn attention causal={causal}: max abs err {(o.float() - ref).abs().max().item():.3e}", file=sys.stderr)
