"""Where the data utilities draw their randomness.

pytorchlite has no Generator yet, so a `generator` argument is a random.Random (None: Python's
global `random` seeds a fresh one).  Every draw goes through these two functions; when
pytorchlite.Generator exists, teaching them to read one is the whole change."""
import random


def draw_seed(generator=None):
    """A 63-bit seed from generator (a random.Random), or from Python's global RNG."""
    return (generator or random).getrandbits(63)


def permutation(n, generator=None):
    """A random permutation of range(n) as a list."""
    rng = random.Random(draw_seed(generator))
    p = list(range(n))
    rng.shuffle(p)
    return p


def rng(generator=None):
    """A random.Random for a sampler's pass: its own stream, seeded from generator."""
    return random.Random(draw_seed(generator))
