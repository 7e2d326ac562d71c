def _gelu(x):
    return torch.nn.functional.gelu(x)  # the erf form, as shardscope's phi


# shardscope's functions (exec/functions.hpp): phi is GELU (erf form), log and sqrt act on |x|,
# scale halves, and the backward's ones, dmax and dF (the derivative of F).
FUNCTIONS = {
    "phi": _gelu,
    "gelu": _gelu,
    "relu": torch.relu,
    "silu": lambda x: x * torch.sigmoid(x),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": lambda x: torch.log(torch.abs(x)),
    "sqrt": lambda x: torch.sqrt(torch.abs(x)),
    "neg": lambda x: -x,
    "scale": lambda x: 0.5 * x,
    "ones": torch.ones_like,
    "dmax": lambda x: (x == 0).to(x.dtype),
    "drelu": lambda x: (x > 0).to(x.dtype),
    "dphi": lambda x: 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)) + x * torch.exp(-0.5 * x * x) * 0.3989422804014327,
    "dgelu": lambda x: 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)) + x * torch.exp(-0.5 * x * x) * 0.3989422804014327,
    "dsilu": lambda x: torch.sigmoid(x) * (1.0 + x * (1.0 - torch.sigmoid(x))),
    "dsigmoid": lambda x: torch.sigmoid(x) * (1.0 - torch.sigmoid(x)),
    "dtanh": lambda x: 1.0 - torch.tanh(x) * torch.tanh(x),
    "dexp": torch.exp,
    "dlog": lambda x: 1.0 / x,
    "dsqrt": lambda x: (0.5 - (x < 0).to(x.dtype)) / torch.sqrt(torch.abs(x)),
}


def fn(name, linear):
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    if linear:
        return FUNCTIONS["scale"]  # a declared linear function's stand-in
    if name.startswith("d"):
        return FUNCTIONS["dtanh"]  # the derivative of a declared function's stand-in
    return torch.tanh  # a declared elementwise function's stand-in


def reduce(kind, x, axes):
    if not axes:
        return x  # (torch reads dim=() as every dimension)
    if kind == "max":
        return torch.amax(x, dim=axes)
    if kind == "mean":
        return torch.mean(x, dim=axes)
    return torch.sum(x, dim=axes)


def regroup(x, have, want, shape):
    """The same values under another index order or grouping (row-major)."""
    if have != want and sorted(have) == sorted(want):
        return torch.einsum(have + "->" + want, x)
    return x.reshape(shape)


def bcast(x, have, want):
    """x (indices `have`) broadcast to the indices `want`."""
    order = "".join(c for c in want if c in have)
    if have and order != have:
        x = torch.einsum(have + "->" + order, x)
    return x.reshape(tuple(x.shape[order.index(c)] if c in have else 1 for c in want))
