"""Bad input to the K-means family: mechanism constructors, PointCloud, TrustSplitSource, the WCSS task,
gaussian_clusters, and releases on data the mechanism was not built for."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

from hybridpriv.families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LloydKMeans,
    LMKMeans,
    PointCloud,
    TCMKMeans,
    TrustSplitSource,
    gaussian_clusters,
)

KMEANS = {
    "TCMKMeans": lambda k, eps, tau, b, d, **kw: TCMKMeans(k, eps, tau, b, d, **kw),
    "LMKMeans": lambda k, eps, tau, b, d, **kw: LMKMeans(k, eps, tau, b, d, **kw),
    "HybridKMeans": lambda k, eps, tau, b, d, **kw: HybridKMeans(k, eps, tau, b, d, **kw),
    "LloydKMeans": lambda k, eps, tau, b, d, **kw: LloydKMeans(k, tau, b, d, **kw),
}
UNIT = Bounds(0.0, 1.0)
POINTS = np.array([[0.1, 0.2], [0.9, 0.8], [0.5, 0.5], [0.3, 0.7]])
TRUSTED = np.array([True, False, False, True])

bad_count = st.one_of(st.integers(max_value=0), not_int)  # k, tau, d, draws, n_per_cluster
bad_points = st.one_of(
    st.just([[0.5, NAN]]),
    st.just([[0.5, INF]]),
    st.just([[0.5, 1.5]]),  # outside the unit square
    st.just([[-0.1, 0.5]]),
    st.just([0.5, 0.5]),  # 1-D
    st.just(np.zeros((2, 2, 2))),
    st.just(np.zeros((0, 2))),
    st.just(np.zeros((3, 0))),
    st.just([["a", "b"]]),
    st.just([[1 + 2j, 0.5]]),
    st.none(),
)


@cfg(260)
@given(name=st.sampled_from(sorted(KMEANS)), which=st.sampled_from(["k", "epsilon", "tau", "bounds", "d"]), data=st.data())
@counted("kmeans")
def test_kmeans_constructors_reject_bad_parameters(name, which, data):
    if name == "LloydKMeans" and which == "epsilon":
        which = "tau"
    args = {"k": 2, "eps": 1.0, "tau": 2, "b": (0.0, 1.0), "d": 2}
    key = {"epsilon": "eps", "bounds": "b"}.get(which, which)
    args[key] = data.draw({"k": bad_count, "epsilon": bad_epsilon, "tau": bad_count, "bounds": bad_bounds,
                           "d": bad_count}[which])
    rejects(lambda: KMEANS[name](**args), which)


@cfg(120)
@given(which=st.sampled_from(["pwh_noise", "debias"]), cls=st.sampled_from(["HybridKMeans", "LMKMeans"]), data=st.data())
@counted("kmeans")
def test_kmeans_options_reject(which, cls, data):
    if cls == "LMKMeans":
        which = "debias"
    value = data.draw(st.one_of(unknown_word, st.none(), st.integers()) if which == "pwh_noise" else not_bool)
    rejects(lambda: KMEANS[cls](2, 1.0, 2, (0, 1), 2, **{which: value}), which)


@cfg(100)
@given(eps=st.floats(5e-324, 1e-306), m=st.floats(1.0, 1e10), name=st.sampled_from(["TCMKMeans", "LMKMeans", "HybridKMeans"]))
@counted("kmeans")
def test_kmeans_extreme_epsilon_is_refused_up_front(eps, m, name):
    rejects(lambda: KMEANS[name](2, eps, 3, (0.0, m), 2), "epsilon")


@cfg(200)
@given(which=st.sampled_from(["points", "trusted", "init", "centres", "bounds"]), data=st.data())
@counted("kmeans")
def test_point_cloud_rejects(which, data):
    args = {"points": POINTS, "trusted": TRUSTED, "bounds": (0.0, 1.0), "init": None, "centres": None}
    args[which] = data.draw({
        "points": bad_points,
        "trusted": st.one_of(st.just(np.ones(4)), st.just(TRUSTED[:3]), st.just(["yes"] * 4), st.just(np.ones((4, 1), bool))),
        "init": bad_points.filter(lambda v: not (isinstance(v, np.ndarray) and v.shape == (0, 2)) and v is not None),
        "centres": st.one_of(st.just([[NAN, 0.5]]), st.just([[0.5]]), st.just(np.zeros((0, 2))), st.just([["a", "b"]])),
        "bounds": bad_bounds,
    }[which])
    rejects(lambda: PointCloud(**args), which, *(["data"] if which in ("points", "init") else []))


@cfg(160)
@given(which=st.sampled_from(["points", "c", "k", "draws", "centres"]), data=st.data())
@counted("kmeans")
def test_trust_split_source_rejects(which, data):
    args = {"points": POINTS, "bounds": (0.0, 1.0), "c": 0.5, "k": 2, "draws": 3, "centres": None}
    args[which] = data.draw({
        "points": bad_points,
        "c": st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(NAN), not_a_number, st.just(0.01)),
        "k": bad_count,
        "draws": bad_count,
        "centres": st.one_of(st.just([[NAN, 0.5]]), st.just([[0.5]])),
    }[which])
    rejects(lambda: TrustSplitSource(**args), which, *(["data"] if which == "points" else []))


@cfg(120)
@given(which=st.sampled_from(["centres", "sigma", "n_per_cluster", "bounds"]), data=st.data())
@counted("kmeans")
def test_gaussian_clusters_rejects(which, data):
    args = {"centres": [[0.5, 0.5]], "sigma": 0.1, "n_per_cluster": 5, "bounds": (0.0, 1.0)}
    args[which] = data.draw({
        "centres": st.one_of(st.just([[NAN, 0.5]]), st.just([0.5]), st.just([["a"]]), st.none()),
        "sigma": bad_positive,
        "n_per_cluster": bad_count,
        "bounds": bad_bounds,
    }[which])
    rejects(lambda: gaussian_clusters(**args, rng=np.random.default_rng(0)), which)


@cfg(160)
@given(
    name=st.sampled_from(sorted(KMEANS)),
    which=st.sampled_from(["data", "bounds", "d", "k", "rng", "trials"]),
    data=st.data(),
)
@counted("kmeans")
def test_kmeans_release_rejects_data_it_was_not_built_for(name, which, data):
    mech = KMEANS[name](2, 1.0, 2, (0.0, 1.0), 2)
    cloud = PointCloud(POINTS, TRUSTED, UNIT, [[0.2, 0.2], [0.8, 0.8]])
    rng, trials = np.random.default_rng(0), 2
    if which == "data":
        cloud = data.draw(st.sampled_from([POINTS, None, "points", [POINTS, TRUSTED]]))
    elif which == "bounds":
        cloud = PointCloud(POINTS, TRUSTED, (0.0, 2.0), [[0.2, 0.2], [0.8, 0.8]])
    elif which == "d":
        mech = KMEANS[name](2, 1.0, 2, (0.0, 1.0), 3)
    elif which == "k":
        mech = KMEANS[name](3, 1.0, 2, (0.0, 1.0), 2)
        which = "init"
    elif which == "rng":
        rng = data.draw(st.sampled_from([None, 0, np.random.RandomState(0), "rng"]))
    else:
        trials = data.draw(bad_count)
    rejects(lambda: mech.release(cloud, rng, trials), which)


@cfg(120)
@given(
    name=st.sampled_from(sorted(KMEANS)),
    k=st.integers(1, 5),
    eps=st.one_of(good_epsilon, st.just(INF)),
    tau=st.integers(1, 4),
    d=st.integers(1, 3),
    lower=st.floats(-100, 100),
    width=st.floats(1e-2, 1e3),
    data=st.data(),
)
@counted("kmeans")
def test_kmeans_good_input_releases_centres_inside_the_box(name, k, eps, tau, d, lower, width, data):
    b = Bounds(lower, lower + width)
    n = data.draw(st.integers(1, 12))
    pts = data.draw(hnp.arrays(np.float64, (n, d), elements=st.floats(b.lower, b.upper)))
    trusted = data.draw(hnp.arrays(np.bool_, (n,)))
    init = data.draw(st.one_of(st.none(), hnp.arrays(np.float64, (k, d), elements=st.floats(b.lower, b.upper))))
    mech = KMEANS[name](k, eps, tau, b, d)
    cloud = PointCloud(pts, trusted, b, init)
    out = accepts(lambda: mech.release(cloud, np.random.default_rng(1), trials=3))
    assert out.shape == (3, k, d)
    finite(out)
    assert ((out >= b.lower) & (out <= b.upper)).all()
    loss = accepts(lambda: WCSS().loss(mech, out, cloud, {}))
    finite(loss)
    assert all(g.epsilon >= 0 for g in mech.privacy.values())
