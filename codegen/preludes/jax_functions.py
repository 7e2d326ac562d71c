def _erf(x):
    return jax.scipy.special.erf(x)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _sigmoid(x):
    return 1.0 / (1.0 + jnp.exp(-x))


# shardscope's functions (exec/functions.hpp): phi is GELU (erf form), log and sqrt act on |x|,
# scale halves, and the backward's ones, dmax and dF (the derivative of F).
FUNCTIONS = {
    "phi": _gelu,
    "gelu": _gelu,
    "relu": lambda x: jnp.maximum(x, 0.0),
    "silu": lambda x: x * _sigmoid(x),
    "sigmoid": _sigmoid,
    "tanh": jnp.tanh,
    "exp": jnp.exp,
    "log": lambda x: jnp.log(jnp.abs(x)),
    "sqrt": lambda x: jnp.sqrt(jnp.abs(x)),
    "neg": lambda x: -x,
    "scale": lambda x: 0.5 * x,
    "ones": jnp.ones_like,
    "dmax": lambda x: jnp.where(x == 0, 1.0, 0.0).astype(x.dtype),
    "drelu": lambda x: jnp.where(x > 0, 1.0, 0.0).astype(x.dtype),
    "dphi": lambda x: 0.5 * (1.0 + _erf(x / np.sqrt(2.0))) + x * jnp.exp(-0.5 * x * x) * 0.3989422804014327,
    "dgelu": lambda x: 0.5 * (1.0 + _erf(x / np.sqrt(2.0))) + x * jnp.exp(-0.5 * x * x) * 0.3989422804014327,
    "dsilu": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "dsigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "dtanh": lambda x: 1.0 - jnp.tanh(x) * jnp.tanh(x),
    "dexp": jnp.exp,
    "dlog": lambda x: 1.0 / x,
    "dsqrt": lambda x: jnp.where(x < 0, -0.5, 0.5) / jnp.sqrt(jnp.abs(x)),
}


def fn(name, linear):
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    if linear:
        return FUNCTIONS["scale"]  # a declared linear function's stand-in
    if name.startswith("d"):
        return FUNCTIONS["dtanh"]  # the derivative of a declared function's stand-in
    return jnp.tanh  # a declared elementwise function's stand-in


def reduce(kind, x, axes):
    if not axes:
        return x
    if kind == "max":
        return jnp.max(x, axis=axes)
    if kind == "mean":
        return jnp.mean(x, axis=axes)
    return jnp.sum(x, axis=axes)


def regroup(x, have, want, shape):
    """The same values under another index order or grouping (row-major)."""
    if have != want and sorted(have) == sorted(want):
        return jnp.einsum(have + "->" + want, x)
    return x.reshape(shape)


def bcast(x, have, want):
    """x (indices `have`) broadcast to the indices `want`."""
    order = "".join(c for c in want if c in have)
    if have and order != have:
        x = jnp.einsum(have + "->" + order, x)
    return x.reshape(tuple(x.shape[order.index(c)] if c in have else 1 for c in want))


def ring_step(x, axis, shift, pairs):
    """Permute_{i_k}: x moved forward by `shift` along `axis`, cyclically; the sharding
    constraint that follows makes XLA send each block to the next device (`pairs`)."""
    return jnp.roll(x, shift, axis)
