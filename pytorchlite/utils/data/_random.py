"""Where the data utilities draw their randomness.

A `generator` argument is a pytorchlite.Generator (as in PyTorch), or a random.Random; None
draws from pytorchlite's default generator, so pytorchlite.manual_seed makes shuffling,
random_split and worker seeds reproducible, as torch.manual_seed does.  Each sampler pass
seeds one random.Random from a 63-bit draw and shuffles with it."""
import random


def draw_seed(generator=None):
    """A 63-bit seed from generator (a Generator or random.Random; None: the default one)."""
    if isinstance(generator, random.Random):
        return generator.getrandbits(63)
    from ... import empty, int64
    return int(empty((), dtype=int64).random_(generator=generator).item())


def permutation(n, generator=None):
    """A random permutation of range(n) as a list."""
    p = list(range(n))
    rng(generator).shuffle(p)
    return p


def rng(generator=None):
    """A random.Random for a sampler's pass: its own stream, seeded from generator."""
    return random.Random(draw_seed(generator))
