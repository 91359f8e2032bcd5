"""The batched solver's parts against plain float64 numpy: the symmetric product, the line search, the
stopping test in the row-span basis, and the two bases against each other."""

import numpy as np
import pytest
import torch

from crsbench.probe import solver


@pytest.mark.parametrize("shape", [(5, 1), (7, 2), (9, 5), (40, 64)])
def test_gram_of_columns_equals_the_whole_product(shape):
    a = torch.as_tensor(np.random.default_rng(0).normal(size=shape))
    np.testing.assert_allclose(solver._gram_of_columns(a).numpy(), a.numpy().T @ a.numpy(), rtol=1e-12, atol=1e-12)


def _line_problem(link, n_problems, rng):
    n, k = 60, 3 if link == "softmax" else 1
    logits = rng.normal(size=(n_problems, k, n)) * 2
    # directions from small to very long, so that some problems stop at the first trial and some search on
    delta = rng.normal(size=(n_problems, k, n)) * np.geomspace(0.05, 20, n_problems)[:, None, None]
    if link == "softmax":
        targets = np.eye(k)[rng.integers(0, k, n)].T[None]
    else:
        targets = (rng.random((n_problems, 1, n)) < 0.4).astype(float)
    weights = np.full((n_problems, 1, n), 1.0 / n)
    l2 = np.geomspace(1e-3, 1.0, n_problems)
    w = rng.normal(size=(n_problems, k, 4))
    dir_w = rng.normal(size=(n_problems, k, 4))
    return logits, delta, targets, weights, l2, w, dir_w


def _derivative(link, logits, delta, targets, weights, l2, w, dir_w, alpha):
    moved = logits + alpha[:, None, None] * delta
    if link == "softmax":
        proba = np.exp(moved - moved.max(1, keepdims=True))
        proba /= proba.sum(1, keepdims=True)
    else:
        proba = 0.5 * (1 + np.tanh(0.5 * moved))  # the logistic function without overflow
    data = (((proba - targets) * delta).sum(1) * weights[:, 0]).sum(-1)
    return data + l2 * ((w * dir_w).sum((1, 2)) + alpha * (dir_w * dir_w).sum((1, 2))), moved, proba


@pytest.mark.parametrize("link", ["softmax", "sigmoid"])
def test_line_search_meets_its_derivative_condition_for_every_problem(link):
    rng = np.random.default_rng(1)
    n_problems = 7
    logits, delta, targets, weights, l2, w, dir_w = _line_problem(link, n_problems, rng)
    slope, _, _ = _derivative(link, logits, delta, targets, weights, l2, w, dir_w, np.zeros(n_problems))
    descent = slope < 0
    delta[~descent], dir_w[~descent] = -delta[~descent], -dir_w[~descent]  # every direction downhill
    slope = np.where(descent, slope, -slope)
    # rescale half the directions so that their minimiser lies at step 1, as a good quasi-Newton step's does
    low, high = np.zeros(n_problems), np.full(n_problems, 1e3)
    for _ in range(100):
        middle = (low + high) / 2
        rising = _derivative(link, logits, delta, targets, weights, l2, w, dir_w, middle)[0] > 0
        low, high = np.where(rising, low, middle), np.where(rising, middle, high)
    rescale = np.where(np.arange(n_problems) % 2 == 0, (low + high) / 2, 1.0)
    delta, dir_w, slope = delta * rescale[:, None, None], dir_w * rescale[:, None, None], slope * rescale
    proba_of, _ = solver.LINKS[link]
    as_torch = [torch.as_tensor(a) for a in (logits, delta, targets, weights)]
    alpha, moved, proba = solver._line_search(
        *as_torch, proba_of, torch.as_tensor(l2), torch.as_tensor(w), torch.as_tensor(dir_w), torch.as_tensor(slope)
    )
    alpha = alpha.numpy()
    derivative, expected_moved, expected_proba = _derivative(link, logits, delta, targets, weights, l2, w, dir_w, alpha)
    assert np.all(np.abs(derivative) <= solver.LINE_SEARCH_TOLERANCE * np.abs(slope) + 1e-12)
    assert (alpha == 1).any() and (alpha != 1).any()  # some stopped at the first trial, the rest searched on
    np.testing.assert_allclose(moved.numpy(), expected_moved, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(proba.numpy(), expected_proba, rtol=1e-10, atol=1e-12)


def test_stopping_test_in_the_row_span_agrees_with_the_feature_gradient():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(20, 80))
    features = solver._Features(z, torch.device("cpu"), torch.float64)
    assert features.in_span
    tol = 1e-3
    # gradients in the span basis at scales around tol, so the bound settles some and not others
    grad = torch.as_tensor(rng.normal(size=(300, features.dim)) * np.geomspace(1e-6, 1e-1, 300)[:, None])
    exact = (grad @ features.to_features.T).abs().amax(-1)
    largest = features.feature_max_gradient(grad, tol)
    np.testing.assert_array_equal((largest <= tol).numpy(), (exact <= tol).numpy())
    assert np.all(largest.numpy() >= exact.numpy() * (1 - 1e-12))  # exact, or the Euclidean bound above it


@pytest.mark.parametrize("link", ["softmax", "sigmoid"])
def test_row_span_and_feature_bases_reach_the_same_optimum(link, monkeypatch):
    rng = np.random.default_rng(3)
    n, d, k = 30, 50, 3
    z = rng.normal(size=(n, d))
    z = (z - z.mean(0)) / z.std(0)
    y = rng.integers(0, k, n)
    if link == "softmax":
        batch = solver.Batch("softmax", np.eye(k)[y], np.full((n, 2), 1.0 / n), np.array([1e-2, 1e-4]), k)
    else:
        targets = (y[:, None] == np.array([0, 0, 1, 1])[None]).astype(float)
        batch = solver.Batch("sigmoid", targets, np.full((n, 4), 1.0 / n), np.array([1e-2, 1e-4, 1e-2, 1e-4]), 1)
    solutions = []
    for span_below in (10.0, 0.0):  # always the row span, never the row span
        monkeypatch.setattr(solver, "SPAN_BELOW", span_below)
        solutions.append(solver.solve(z, batch, max_iter=5000, tol=1e-10, device="cpu", dtype=torch.float64))
    in_span, in_features = solutions
    assert np.all(in_span.grad_norm <= 1e-10) and np.all(in_features.grad_norm <= 1e-10)
    np.testing.assert_allclose(in_span.coef, in_features.coef, atol=1e-6)
    np.testing.assert_allclose(in_span.intercept, in_features.intercept, atol=1e-6)


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_sum_zero_basis_is_orthonormal_and_orthogonal_to_the_ones(k):
    basis = solver.sum_zero_basis(k, "cpu", torch.float64).numpy()
    assert basis.shape == (k, k - 1)
    np.testing.assert_allclose(basis.T @ basis, np.eye(k - 1), atol=1e-12)
    np.testing.assert_allclose(basis.sum(0), 0, atol=1e-12)


@pytest.mark.parametrize("k", [3, 8])
def test_softmax_solution_in_sum_zero_coordinates_is_the_full_multinomial_optimum(k):
    # the full k-class objective's gradient, in float64 numpy, vanishes at the solution found with k - 1 coordinates
    rng = np.random.default_rng(4)
    n, d = 200, 6
    z = rng.normal(size=(n, d))
    z = (z - z.mean(0)) / z.std(0)
    y = rng.integers(0, k, n)
    l2 = np.array([1e-1, 1e-3])
    batch = solver.Batch("softmax", np.eye(k)[y], np.full((n, 2), 1.0 / n), l2, k)
    solution = solver.solve(z, batch, max_iter=5000, tol=1e-10, device="cpu", dtype=torch.float64)
    for p in range(2):
        coef, intercept = solution.coef[p], solution.intercept[p]
        logits = z @ coef + intercept
        proba = np.exp(logits - logits.max(1, keepdims=True))
        proba /= proba.sum(1, keepdims=True)
        residual = (proba - np.eye(k)[y]) / n
        assert np.abs(z.T @ residual + l2[p] * coef).max() <= 1e-9
        assert np.abs(residual.sum(0)).max() <= 1e-9
        np.testing.assert_allclose(coef.sum(1), 0, atol=1e-12)  # as the optimum of the full objective has


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("step", [1, 3])
def test_upper_gram_equals_the_whole_product_on_its_upper_triangle(dtype, step):
    a = torch.as_tensor(np.random.default_rng(5).normal(size=(61, 17)), dtype=dtype)[::step]  # strided rows too
    expected = a.double().numpy().T @ a.double().numpy()
    got = solver._upper_gram(a).double().numpy()
    np.testing.assert_allclose(np.triu(got), np.triu(expected), rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-4 if dtype == torch.float32 else 1e-10)
    eigvals = torch.linalg.eigh(solver._upper_gram(a), UPLO="U")[0].double().numpy()
    np.testing.assert_allclose(eigvals, np.linalg.eigvalsh(expected), rtol=1e-4, atol=1e-3)


def _objective_gradient(z, batch, coef, intercept):
    """max |gradient| per problem of the batch's objective at (coef [P, d, k], intercept [P, k]), float64 numpy."""
    norms = []
    for p in range(len(batch.l2)):
        logits = z @ coef[p] + intercept[p]
        weights = batch.row_weights[:, p : p + 1].astype(float)
        if batch.link == "softmax":
            proba = np.exp(logits - logits.max(1, keepdims=True))
            proba /= proba.sum(1, keepdims=True)
            residual = (proba - batch.targets) * weights
        else:
            residual = (0.5 * (1 + np.tanh(0.5 * logits)) - batch.targets[:, p : p + 1]) * weights
        norms.append(max(np.abs(z.T @ residual + batch.l2[p] * coef[p]).max(), np.abs(residual.sum(0)).max()))
    return np.array(norms)


def _warm_up_batch(link, rng, n=3000, d=24, k=4):
    z = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))  # correlated features, as embeddings have
    z = ((z - z.mean(0)) / z.std(0)).astype(np.float32)
    y = (z[:, :k] + rng.normal(size=(n, k))).argmax(1)
    l2 = 1.0 / (np.array([1e-2, 1.0, 100.0]) * n)
    if link == "softmax":
        return z, solver.Batch("softmax", np.eye(k, dtype=np.float32)[y], np.full((n, 3), 1.0 / n, np.float32), l2, k)
    targets = np.repeat((y == 0).astype(np.float32)[:, None], 3, axis=1)
    seen = rng.random((n, 3)) > 0.2  # masked rows, as a multi-label task's missing labels
    weights = (seen / seen.sum(0)).astype(np.float32)
    return z, solver.Batch("sigmoid", targets, weights, l2 * n / seen.sum(0), 1)


@pytest.fixture
def warm_up_everywhere(monkeypatch):
    """The bfloat16 warm-up on whatever CPU runs the test (emulated where not native), from few rows; the
    calls to warm_up_rows that returned rows are counted."""
    monkeypatch.setattr(solver, "bfloat16_is_native", lambda device: True)
    monkeypatch.setattr(solver, "WARM_UP_ROWS", 100)
    calls = []
    original = solver.warm_up_rows

    def counted(rows, dtype):
        fast = original(rows, dtype)
        calls.append(fast is not None)
        return fast

    monkeypatch.setattr(solver, "warm_up_rows", counted)
    return calls


@pytest.mark.parametrize("link", ["softmax", "sigmoid"])
def test_warm_up_ends_at_the_float32_tolerance_on_the_float64_objective(link, warm_up_everywhere):
    z, batch = _warm_up_batch(link, np.random.default_rng(5))
    tol = 1e-6
    solution = solver.solve(z, batch, max_iter=1000, tol=tol, device="cpu")
    assert warm_up_everywhere == [True]
    assert np.all(solution.grad_norm <= tol) and np.all(solution.iterations < 1000)
    # the float64 objective agrees: the answer is the float32 descent's, not the bfloat16 warm-up's
    assert np.all(_objective_gradient(z.astype(float), batch, solution.coef, solution.intercept) <= 2 * tol)


def test_warm_up_is_deterministic(warm_up_everywhere):
    z, batch = _warm_up_batch("softmax", np.random.default_rng(6))
    first, second = (solver.solve(z, batch, max_iter=1000, tol=1e-6, device="cpu") for _ in range(2))
    assert warm_up_everywhere == [True, True]
    np.testing.assert_array_equal(first.coef, second.coef)
    np.testing.assert_array_equal(first.intercept, second.intercept)
    np.testing.assert_array_equal(first.iterations, second.iterations)


def test_warm_up_that_cannot_reach_its_tolerance_stops_by_the_stall_guard(monkeypatch):
    # no rounding floor and a tolerance of zero: only the stall guard can end the bfloat16 descent, and
    # the float32 descent then finishes from where it stopped, with its secant pairs
    monkeypatch.setattr(solver, "ROUNDING_FLOOR", 0.0)
    z, batch = _warm_up_batch("softmax", np.random.default_rng(7))
    cpu = torch.device("cpu")
    features = solver._Features(z, cpu, torch.float32)
    descent = solver._Descent(features, batch, cpu, torch.float32)
    w = torch.zeros(len(batch.l2), batch.n_outputs - 1, features.dim)
    b = solver._initial_intercepts(batch, descent.targets, descent.weights)
    iterations = np.zeros(len(batch.l2), dtype=np.int64)
    w, b, _, history = descent.run(features.rows.to(torch.bfloat16), w, b, iterations, 0.0, 1000, rounding=2.0**-7, collect_history=True)
    assert np.all(iterations >= solver.WARM_UP_STALL) and np.all(iterations < 200)
    warm = iterations.copy()
    w, b, grad_norm, _ = descent.run(features.rows, w, b, iterations, 1e-6, 1000, history)
    assert np.all(grad_norm <= 1e-6) and np.all(iterations < 1000)
    assert np.all(iterations - warm < 100)


def test_warm_up_stays_off_for_float64_for_few_rows_and_without_native_bfloat16(monkeypatch):
    rows = torch.zeros(solver.WARM_UP_ROWS, 3)
    monkeypatch.setattr(solver, "bfloat16_is_native", lambda device: True)
    assert solver.warm_up_rows(rows, torch.float32).dtype == torch.bfloat16
    assert solver.warm_up_rows(rows.double(), torch.float64) is None
    assert solver.warm_up_rows(rows[:-1], torch.float32) is None
    monkeypatch.setattr(solver, "bfloat16_is_native", lambda device: False)
    assert solver.warm_up_rows(rows, torch.float32) is None


def test_history_hand_over_puts_each_problem_newest_pair_last():
    size, n_problems = 3, 4
    history = solver._History(n_problems, size, torch.device("cpu"), torch.float64)
    for step in range(solver.HISTORY + 3):  # past one turn of the ring
        value = torch.full((n_problems, size), float(step + 1))
        history.add(value, value)  # curvature > 0: every pair accepted
    into = solver._History.collecting(n_problems, size, torch.device("cpu"), torch.float64)
    mask = torch.tensor([False, True, False, True])
    history.hand_over(into, np.array([0, 2]), mask)
    steps = into.s[:, [0, 2], 0]  # step numbers, oldest slot first
    expected = torch.arange(4, solver.HISTORY + 4, dtype=torch.float64)
    np.testing.assert_array_equal(steps[:, 0].numpy(), expected.numpy())
    np.testing.assert_array_equal(steps[:, 1].numpy(), expected.numpy())
    assert torch.all(into.rho[:, [1, 3]] == 0)  # problems not handed over stay out of the recursion
    assert into.order()[0] == solver.HISTORY - 1


def test_the_warm_up_follows_the_device_decision_and_the_answer_stays_float32(monkeypatch):
    # a GPU of capability 8.0 would run the warm-up: here its decision is taken for the CPU the test runs on
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (8, 0))
    monkeypatch.setattr(solver, "bfloat16_is_native",
                        lambda device, decide=solver.bfloat16_is_native: decide("cuda"))
    monkeypatch.setattr(solver, "WARM_UP_ROWS", 100)
    z, batch = _warm_up_batch("softmax", np.random.default_rng(8))
    rows = torch.from_numpy(z)
    assert solver.warm_up_rows(rows, torch.float32).dtype == torch.bfloat16
    assert solver.warm_up_rows(rows.double(), torch.float64) is None  # a float64 solve: never
    solution = solver.solve(z, batch, max_iter=1000, tol=1e-6, device="cpu")
    assert np.all(solution.grad_norm <= 1e-6)
    assert np.all(_objective_gradient(z.astype(float), batch, solution.coef, solution.intercept) <= 2e-6)
