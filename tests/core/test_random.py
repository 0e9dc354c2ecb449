"""Named seed streams: independent by name and key, stable, and refusing what is not a key."""

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.random import as_generator, check_seed, key, rng, stream


def test_streams_depend_only_on_seed_name_and_keys():
    a = rng(7, "dataset", 0, 3).random(4)
    np.testing.assert_array_equal(a, rng(7, "dataset", 0, 3).random(4))
    for other in (rng(8, "dataset", 0, 3), rng(7, "mechanism", 0, 3), rng(7, "dataset", 0, 4), rng(7, "dataset", 3, 0)):
        assert not np.array_equal(a, other.random(4))
    # the documented recipe: spawn key = (key(name), *keys)
    assert stream(7, "dataset", 0, 3).spawn_key == (key("dataset"), 0, 3)
    assert stream(7, "mechanism", "weighted", 1, 2).spawn_key == (key("mechanism"), key("weighted"), 1, 2)
    # keyed below a SeedSequence
    parent = np.random.SeedSequence(5, spawn_key=(9,))
    assert stream(parent, "x", 1).spawn_key == (9, key("x"), 1)


def test_string_keys_are_the_first_128_bits_of_their_sha256():
    import hashlib
    import zlib

    assert key("dataset") == int.from_bytes(hashlib.sha256(b"dataset").digest()[:16], "little")
    assert key(5) == 5 and max(key(f"k={i}") for i in range(1000)).bit_length() > 120
    # "plumless" and "buckeroo" share their CRC-32 (the scheme before): two candidates so named drew the same noise
    assert zlib.crc32(b"plumless") == zlib.crc32(b"buckeroo") and key("plumless") != key("buckeroo")
    assert not np.array_equal(rng(1, "mechanism", "plumless").random(4), rng(1, "mechanism", "buckeroo").random(4))


def test_streams_with_neighbouring_keys_are_independent():
    # 200 streams keyed 0..199: their first uniforms are iid U(0,1) and uncorrelated with key
    first = np.array([rng(1, "dataset", 0, d).random() for d in range(2000)])
    assert stats.kstest(first, "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(first[:-1], first[1:])[0, 1]) < 4 / np.sqrt(first.size)


def test_bad_seeds_and_keys_are_refused():
    for bad in (-1, 2**63, 1.5, "1", True, None):
        with pytest.raises((TypeError, ValueError), match="seed"):
            check_seed(bad)
    with pytest.raises(TypeError, match="stream keys"):
        stream(1, "x", -1)
    with pytest.raises(TypeError, match="stream keys"):
        stream(1, "x", 1.5)
    with pytest.raises(TypeError, match="stream name"):
        stream(1, "")


def test_as_generator_follows_spec_7():
    g = np.random.default_rng(3)
    assert as_generator(g) is g
    np.testing.assert_array_equal(as_generator(4).random(3), np.random.default_rng(4).random(3))
    np.testing.assert_array_equal(as_generator(np.random.SeedSequence(4)).random(3), np.random.default_rng(4).random(3))
    assert isinstance(as_generator(None), np.random.Generator)
    with pytest.raises(TypeError, match="rng must be"):
        as_generator("seed")
