"""Registered models. Importing this package registers every model.

| name | thesis | module |
|---|---|---|
| `transformer` | Transformer base / relative (2.3, 5.2) | `transformer.py` |
| `tree_distance` | TreeDistance (3.1.2) | `tree_distance.py` |
| `tree_traversal` | TreeTraversal (3.1.3) | `tree_traversal.py` |
| `spec_pos` | SpecPOS (3.2) | `spec_pos.py` |
| `spec_dep` | SpecDep (3.2) | `spec_dep.py` |
| `dep_parse` | DepParse (4.1) | `dep_parse.py` |
| `diagonal_parse` | DiagonalParse (4.2) | `diagonal_parse.py` |
| `pascal` | Pascal, parent-scaled heads (Bugliarello and Okazaki 2020) | `pascal.py` |
| `sennrich_haddow` | S&H source factors (their baseline) | `sennrich_haddow.py` |
| `sisa` | SISA bi-affine parent head (their baseline) | `sisa.py` |
| `mgsa` | MG-SA, multi-granularity self-attention (Hao et al. 2019) | `mgsa.py` |
| `nsd` | neural syntactic distances (Ma et al. 2019) | `nsd.py` |
| `tree2seq` | Tree-to-sequence attentional NMT (Eriguchi et al. 2016) | `tree2seq.py` |
| `anmt` | sequential attentional NMT, optionally reversed input (tree2seq's baseline) | `anmt.py` |

Relative positions combine with every model through the hparam
`max_relative_position` (the `transformer_relative` set).
"""

from syntax_t2t.models import (  # noqa: F401
    anmt,
    dep_parse,
    diagonal_parse,
    mgsa,
    nsd,
    pascal,
    sennrich_haddow,
    sisa,
    spec_dep,
    spec_pos,
    transformer,
    tree2seq,
    tree_distance,
    tree_traversal,
)
