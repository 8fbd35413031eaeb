"""Small fully vectorized NumPy references of the algorithms (ideal network)."""

import heapq
import math
from collections import deque

import numpy as np


def fedavg(parts: list[tuple[np.ndarray, np.ndarray]], dim: int, rounds: int, lr: float, steps: int) -> np.ndarray:
    """FedAvg with every client in every round: all clients' local steps at once.

    Clients' data are zero-padded to a common length; zero rows add nothing to
    X_k^T (X_k w - y_k), and the gradient is divided by the true n_k.
    """
    n = np.array([y.shape[0] for _, y in parts], dtype=float)
    X = np.zeros((len(parts), int(n.max()), dim))
    Y = np.zeros((len(parts), int(n.max())))
    for k, (x, y) in enumerate(parts):
        X[k, : y.shape[0]], Y[k, : y.shape[0]] = x, y
    w = np.zeros(dim)
    for _ in range(rounds):
        W = np.broadcast_to(w, (len(parts), dim))
        for _ in range(steps):
            residual = np.einsum("kni,ki->kn", X, W) - Y
            W = W - lr * np.einsum("kni,kn->ki", X, residual) / n[:, None]
        w = n @ W / n.sum()
    return w


def online_fl(data, p, iterations: int, available, omega: np.ndarray, phase: np.ndarray, test) -> tuple[np.ndarray, list[float]]:
    """PAO-Fed / Online-FedSGD without delays, vectorized over clients (eqs. 4.9–4.14).

    `available(n)` is a boolean vector over clients (the environment's draws, or a row of
    a precomputed matrix); a
    client takes part when it has data and is available, and otherwise, with data,
    updates autonomously (4.11).  Returns the final server model and the test MSE (dB)
    after each iteration.
    """
    K, d, m = len(data.clients), p.rff_dim, p.m
    sample = np.full((iterations, K), -1)
    for k, when in enumerate(data.arrival):
        sample[when[when < iterations], k] = np.nonzero(when < iterations)[0]
    # every client's samples stacked once: the samples of a set of clients are one gather
    X_all = np.concatenate(data.inputs)
    y_all = np.concatenate(data.outputs)
    row = np.where(sample >= 0, sample + np.cumsum([0] + [len(x) for x in data.inputs[:-1]]), -1)
    W, w, curve = np.zeros((K, d)), np.zeros(d), []
    ks_all = np.arange(K)
    feats = lambda X: np.sqrt(2.0 / d) * np.cos(X @ omega + phase)
    test_Z = feats(test[0])
    for n in range(iterations):
        has = sample[n] >= 0
        avail = available(n)
        part = ks_all[has & avail]
        idle = ks_all[has & ~avail]
        if part.size:
            X, y = X_all[row[n, part]], y_all[row[n, part]]
            Z = feats(X)
            shift = m * n + (0 if p.coordinated else m * part)[..., None] if not p.coordinated else np.full((part.size, 1), m * n)
            M = (np.arange(m)[None, :] + shift) % d  # rows: M_k^(n) indices
            start = W[part].copy() if p.sharing == "partial" else np.broadcast_to(w, (part.size, d)).copy()
            if p.sharing == "partial":
                start[np.arange(part.size)[:, None], M] = w[M]
            e = y - np.einsum("ki,ki->k", start, Z)
            new = start + p.mu * Z * e[:, None]
            W[part] = new
            if p.sharing == "partial":
                S = M if p.version == 0 else (M + m) % d
            else:
                S = np.broadcast_to(np.arange(d), (part.size, d))
            delta = np.zeros(d)
            np.add.at(delta, S, (new[np.arange(part.size)[:, None], S] - w[S]) / part.size)
            w = w + delta
        if idle.size and p.local_learning:
            X, y = X_all[row[n, idle]], y_all[row[n, idle]]
            Z = feats(X)
            e = y - np.einsum("ki,ki->k", W[idle], Z)
            W[idle] = W[idle] + p.mu * Z * e[:, None]
        r = test[1] - test_Z @ w
        curve.append(float(10 * np.log10(r @ r / r.size)))
    return w, curve


def pgfl(task, server_of: dict, server_graph, p, iterations: int) -> tuple[np.ndarray, list[float]]:
    """PGFL / GFL / ClusterFL with every client in every iteration and no privacy noise,
    vectorized over clients and servers (eqs. 5.4, 5.5, 5.8–5.10).

    Written independently of netemu.kernels.admm: ridge updates solve the batched normal
    equations, logistic updates run batched Newton steps on zero-padded data (a mask
    removes the padding), and aggregation is matrix algebra over membership matrices.
    Returns the final client models (K × d) and the mean metric per iteration (NMSD
    terms of 5.35, or accuracy).
    """
    clients = list(task.parts)
    servers = sorted(set(server_of.values()), key=lambda s: int(s.split("-")[1]))
    K, S, d = len(clients), len(servers), task.dim
    srv = np.array([servers.index(server_of[c]) for c in clients])
    grp = np.array([task.clusters[c] if p.personalized else 0 for c in clients])
    G = grp.max() + 1
    n = np.array([task.parts[c][1].shape[0] for c in clients])
    X = np.zeros((K, n.max(), d))
    Y = np.zeros((K, n.max()))
    mask = np.zeros((K, n.max()))
    for k, c in enumerate(clients):
        X[k, : n[k]], Y[k, : n[k]], mask[k, : n[k]] = task.parts[c][0], task.parts[c][1], 1
    lam = p.lam / np.bincount(srv)[srv]  # λ/|C_s|
    member = np.zeros((S * G, K))  # row s·G + g averages the clients of server s in group g
    member[srv * G + grp, np.arange(K)] = 1
    count = member.sum(axis=1)
    known = (count > 0).reshape(S, G)
    member[count > 0] /= count[count > 0, None]
    adj = np.eye(S)
    if p.inter_server:
        for a, b in server_graph.edges:
            adj[a, b] = adj[b, a] = 1
    eye = np.eye(d)
    XtX = np.einsum("kni,knj->kij", X, X)
    W, Phi, Ws = np.zeros((K, d)), np.zeros((K, d)), np.zeros((S, G, d))
    curve = []
    for it in range(1, iterations + 1):
        target = Ws[srv, grp]
        if task.loss == "ridge":
            A = 2 * XtX / n[:, None, None] + (2 * lam + p.rho)[:, None, None] * eye
            rhs = 2 * np.einsum("kni,kn->ki", X, Y) / n[:, None] + Phi + p.rho * target
            W = np.linalg.solve(A, rhs[..., None])[..., 0]
        else:
            for _ in range(p.newton_steps):
                prob = 1 / (1 + np.exp(-np.einsum("kni,ki->kn", X, W)))
                grad = (np.einsum("kni,kn->ki", X, (prob - Y) * mask) / n[:, None]
                        + 2 * lam[:, None] * W - Phi + p.rho * (W - target))
                curv = prob * (1 - prob) * mask / n[:, None]
                hess = np.einsum("kni,kn,knj->kij", X, curv, X) + (2 * lam + p.rho)[:, None, None] * eye
                W = W - np.linalg.solve(hess, grad[..., None])[..., 0]
        tilde = (member @ (W - Phi / p.rho)).reshape(S, G, d)  # (5.8)
        weight = adj[:, :, None] * known[None, :, :]  # (s, p, g): p's aggregate of g is known
        total = np.einsum("spg,pgi->sgi", weight, tilde)
        heard = weight.sum(axis=1)
        hat = np.where(heard[..., None] > 0, total / np.maximum(heard, 1)[..., None], Ws)  # (5.9)
        tau = p.tau * p.tau_decay**it
        Ws = hat if G == 1 else (1 - tau) * hat + tau * (hat.sum(axis=1, keepdims=True) - hat) / (G - 1)  # (5.10)
        Phi = Phi + p.rho * (Ws[srv, grp] - W)  # (5.5)
        if task.loss == "ridge":
            Wq = task.w_star[[task.clusters[c] for c in clients]]
            curve.append(float(np.mean(np.sum((W - Wq) ** 2, axis=1) / np.sum(Wq**2, axis=1))))
        else:
            accs = [np.mean((task.tests[task.clusters[c]][0] @ W[k] > 0) == (task.tests[task.clusters[c]][1] > 0.5))
                    for k, c in enumerate(clients)]
            curve.append(float(np.mean(accs)))
    return W, curve


def nfl(parts, adjacency: np.ndarray, p, objective, iterations: int, normals=None) -> tuple[np.ndarray, list[np.ndarray]]:
    """zCDP-NFL, (ε,δ)DP-NFL, zCDP-grad-NFL and P-ADMM over a fixed graph, vectorized over
    peers (P2 Algorithm 1, eqs. 7–9; thesis 3.4, 3.7, 3.12, 3.13).

    Written independently of netemu.kernels.nfl: peers are rows, neighbour sums are
    products with the adjacency matrix, losses are evaluated on zero-padded data with a
    mask.  `normals(n)` gives the K × P standard normals of iteration n's perturbation
    (None: no noise).  Returns the final unperturbed models and every iteration's.
    """
    K, d = adjacency.shape[0], parts[0][0].shape[1]
    M = np.array([y.size for _, y in parts], dtype=float)
    X = np.zeros((K, int(M.max()), d))
    Y = np.zeros((K, int(M.max())))
    mask = np.zeros_like(Y)
    for k, (x, y) in enumerate(parts):
        X[k, : y.size], Y[k, : y.size], mask[k, : y.size] = x, y, 1
    deg = adjacency.sum(axis=1)
    l1, l2 = objective.weights

    def gradient(W):  # f_k'(w_k) for every peer: ℓ'/M_k + R'/K
        Z = np.einsum("kmi,ki->km", X, W)
        if objective.name in ("ridge", "elastic_net"):
            r = 2 * (Z - Y)
        elif objective.name == "lad":
            r = np.sign(Z - Y)
        else:
            r = 1 / (1 + np.exp(-Z)) - Y
        return np.einsum("kmi,km->ki", X, r * mask) / M[:, None] + (l1 * np.sign(W) + 2 * l2 * W) / K

    mix = np.where(adjacency > 0, 1 / (1 + np.maximum(deg[:, None], deg[None, :])), 0.0)
    mix += np.diag(1 - mix.sum(axis=1))
    if p.calibration == "epsdelta" and p.phi1 > 0:
        T = iterations
        phi_total = sum(p.phi1 * p.zeta ** -(m - 1) for m in range(1, T + 1))
        eps = phi_total + 2 * np.sqrt(phi_total * np.log(1 / p.delta))
        share = p.zeta ** (-np.arange(T) / 2)
        eps_n = eps * share / share.sum()
    Wt, Gamma, history = np.zeros((K, d)), np.zeros((K, d)), []
    XtX = np.einsum("kmi,kmj->kij", X, X)
    for n in range(1, iterations + 1):
        if p.step == "linearized":
            eta = p.eta0 / n**p.eta_power
            curv = 2 * p.rho * deg + 1 / eta
            W = (Wt / eta + p.rho * (deg[:, None] * Wt + adjacency @ Wt) - Gamma - gradient(Wt)) / curv[:, None]
        elif p.step == "exact":
            curv = 2 * p.rho * deg + 2 * l2 / K
            A = 2 * XtX / M[:, None, None] + curv[:, None, None] * np.eye(d)
            b = 2 * np.einsum("kmi,km->ki", X, Y) / M[:, None] - Gamma + p.rho * (deg[:, None] * Wt + adjacency @ Wt)
            W = np.linalg.solve(A, b[..., None])[..., 0]
        else:
            alpha = p.alpha0 / n**p.alpha_power
            curv = np.full(K, 1 / alpha)
            W = mix @ Wt - alpha * gradient(Wt)
        history.append(W)
        if normals is None or p.phi1 == 0:
            Wt = W
        else:
            sens = 2 * p.grad_bound / (M * curv)
            if p.calibration == "zcdp":
                var = sens**2 / (2 * p.phi1 * p.zeta ** -(n - 1))
            else:
                var = (sens * np.sqrt(2 * np.log(1.25 * iterations / p.delta)) / eps_n[n - 1]) ** 2
            Wt = W + np.sqrt(var)[:, None] * normals(n)
        if p.step != "gradient":
            Gamma = Gamma + p.rho * (deg[:, None] * Wt - adjacency @ Wt)
    return W, history


def npfl(task, adjacency: np.ndarray, names: list, p, iterations: int, sac_draws=None) -> tuple[np.ndarray, list, list]:
    """NFL, NPFL and NPFL-RL (DPG / SAC, batch) over a fixed graph, vectorized over peers
    (thesis 6.3, 6.6, 6.11 corrected, 6.12–6.14).

    Written independently of netemu.kernels.npfl: the primal for action a is a batched
    solve of the normal equations; the DPG slope differentiates them (dw/da = A⁻¹(db/da −
    dA/da w)).  `sac_draws(k, n, epoch)` gives SAC's uniform draw.  Returns the final
    models, the per-iteration mean of ‖w_k − w_q‖²/‖w_q‖², and the τ_k per iteration.
    """
    K, d = len(names), task.dim
    cl = np.array([task.clusters[k] for k in names])
    grp = cl if p.personalized else np.zeros(K, int)
    Q = grp.max() + 1 if p.personalized else 1
    same = adjacency * (grp[:, None] == grp[None, :])
    n_same = same.sum(axis=1)
    # other[k, r]: neighbours of k in cluster r, for r ≠ group of k
    member = np.stack([(grp == r).astype(float) for r in range(Q)], axis=1)  # K × Q
    counts = adjacency @ member
    counts[np.arange(K), grp] = 0
    heard = counts > 0
    share = heard.sum(axis=1) / max(Q - 1, 1)
    lam = p.lam / np.bincount(grp)[grp]
    D = np.array([task.parts[k][1].size for k in names], dtype=float)
    XtX = np.stack([task.parts[k][0].T @ task.parts[k][0] for k in names]) / D[:, None, None]
    Xty = np.stack([task.parts[k][0].T @ task.parts[k][1] for k in names]) / D[:, None]
    eye = np.eye(d)
    W, Gamma = np.zeros((K, d)), np.zeros((K, d))
    tau = np.full(K, p.tau if p.personalized else 0.0)
    curve, taus = [], []

    def solve(a, pull, base):
        A = XtX + (lam + a * share + p.rho * n_same)[:, None, None] * eye
        return np.linalg.solve(A, (base + a[:, None] * pull)[..., None])[..., 0], A

    def values(w):
        out = []
        for k, name in enumerate(names):
            Xv, yv = task.validation[name]
            out.append(np.sum((yv - Xv @ w[k]) ** 2) / yv.size + lam[k] * w[k] @ w[k])
        return np.array(out)

    for n in range(1, iterations + 1):
        means = np.where(heard[..., None], np.einsum("kl,lr,li->kri", adjacency, member, W) / np.maximum(counts, 1)[..., None], 0)
        pull = means.sum(axis=1) / max(Q - 1, 1)
        base = Xty + 0.5 * p.rho * (n_same[:, None] * W + same @ W) - 0.5 * Gamma
        if n > 1 and p.policy != "fixed":
            for epoch in range(p.epochs):
                if p.policy == "dpg":
                    w, A = solve(tau, pull, base)
                    dw = np.linalg.solve(A, (pull - share[:, None] * w)[..., None])[..., 0]
                    grads = []
                    for k, name in enumerate(names):
                        Xv, yv = task.validation[name]
                        grads.append(2 * Xv.T @ (Xv @ w[k] - yv) / yv.size + 2 * lam[k] * w[k])
                    step = -p.dpg_rate * np.einsum("ki,ki->k", np.array(grads), dw)
                else:
                    alpha = p.sac_width * (np.array([sac_draws(k, n, epoch) for k in names]) - 0.5)
                    worse = values(solve(tau + alpha, pull, base)[0]) - values(solve(tau, pull, base)[0])
                    step = -p.sac_rate * np.sign(worse) * alpha
                tau = np.clip(tau + step, 0, 1)
        W, _ = solve(tau, pull, base)
        Gamma = Gamma + p.rho * (n_same[:, None] * W - same @ W)
        Wq = task.w_star[cl]
        curve.append(float(np.mean(np.sum((W - Wq) ** 2, axis=1) / np.sum(Wq**2, axis=1))))
        taus.append(tau.copy())
    return W, curve, taus



def _stacked(task, clients):
    """The clients' samples and labels stacked (equal counts), and their weights ζ_k = n_k / Σ n."""
    X = np.stack([task.parts[k][0] for k in clients])
    Y = np.stack([task.parts[k][1] for k in clients])
    zeta = np.array([task.parts[k][1].size for k in clients], dtype=float)
    return X, Y, zeta / zeta.sum()

def graphfl(task, clients: list, p, A: np.ndarray, theta0: np.ndarray, streams, rounds: int) -> np.ndarray:
    """FedPnP / G-Fedfilt / FedProx / local training with a softmax model, every client in
    every round, dense updates, vectorized over clients (FedPnP eqs. 9, 12, 13, 16;
    G-Fedfilt eq. 12).

    Written independently of netemu.kernels.classifiers and .graphfilter: the K clients'
    mini-batch steps run as one batched computation on (K, batch, d) arrays, with each
    client's permutations drawn from the same named streams as the emulated client.
    Requires equal sample counts.  Returns the final K × B model stack Ψ.
    """
    K = len(clients)
    X, Y, zeta = _stacked(task, clients)
    n, d = X.shape[1], X.shape[2]
    C = task.classes
    lam, V = np.linalg.eigh(np.diag(A.sum(axis=1)) - A)
    lam = np.clip(lam, 0, None)
    Psi = np.tile(theta0, (K, 1))
    for t in range(1, rounds + 1):
        lr = p.lr * (p.lr_decay or 1.0) ** (t - 1)
        Wt = Psi[:, : d * C].reshape(K, d, C).copy()
        bt = Psi[:, d * C :].copy()
        Wa, ba = Wt.copy(), bt.copy()
        rngs = [streams.generator(f"sgd/{k}/{t}") for k in clients]
        for _ in range(int(p.epochs)):  # whole epochs (a task's epochs is a float)
            perms = np.stack([r.permutation(n) for r in rngs])
            for s in range(0, n, p.batch):
                rows = perms[:, s : s + p.batch]
                Xb = np.take_along_axis(X, rows[..., None], axis=1)
                Yb = np.take_along_axis(Y, rows, axis=1)
                logits = Xb @ Wt + bt[:, None, :]  # batched BLAS matmul
                prob = np.exp(logits - logits.max(axis=2, keepdims=True))
                prob /= prob.sum(axis=2, keepdims=True)
                prob[np.arange(K)[:, None], np.arange(rows.shape[1])[None, :], Yb] -= 1
                prob /= rows.shape[1]
                gW = Xb.transpose(0, 2, 1) @ prob + p.mu * (Wt - Wa)
                gb = prob.sum(axis=1) + p.mu * (bt - ba)
                Wt, bt = Wt - lr * gW, bt - lr * gb
        Omega = np.concatenate([Wt.reshape(K, -1), bt], axis=1)
        stack = Omega if p.share == "models" else Omega - Psi
        if p.filter == "identity":
            out = stack
        elif p.filter == "mean":
            out = np.tile(zeta @ stack, (K, 1))
        elif p.filter == "hard":
            keep = min(p.tau, t, K)
            out = V[:, :keep] @ (V[:, :keep].T @ stack)
        else:
            level = p.nu0 * (1 - p.nu_decay) ** t
            nu1, nu2 = max(p.beta1, level), max(p.beta2, level)
            H = V @ np.diag(1 / (1 + nu1 * lam + nu2 * lam**2)) @ V.T
            out = (H @ (zeta[:, None] * stack)) / (H @ zeta)[:, None]
        Psi = out if p.share == "models" else Psi + out
    return Psi


def personal_fl(task, clients: list, p, theta0: np.ndarray, streams, rounds: int,
                kept: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """pFedMe, Per-FedAvg (FO or HF) and FedBN on FedAvg's server (the mean filter), a
    softmax model, every client in every round, vectorized over clients.

    Written from the algorithms' statements (pFedMe Algorithm 1: R local rounds, each K
    inner steps on f(θ; D) + λ/2‖θ − w‖² for one mini-batch D, then w ← w − ηλ(w − θ̂);
    Ψ ← (1 − β)Ψ + β·mean; Per-FedAvg Algorithm 1: R rounds of
    w ← w − β(I − α∇²f(D''))∇f(w − α∇f(w; D); D') on the next batches D, D' (, D'');
    plain SGD: E passes; FedBN: entries where `kept` is True are neither sent nor
    averaged), independently of netemu.kernels.personal and .classifiers, with the
    emulated clients' named streams (batches: successive permutations, cut every `batch`).
    Requires equal sample counts.  Returns (Ψ, the K × B models the clients use).
    """
    K = len(clients)
    X, Y, zeta = _stacked(task, clients)
    n, d = X.shape[1], X.shape[2]
    C = task.classes

    def grad(theta, rows):  # (K, B) flat softmax parameters, (K, b) row indices -> mean CE gradient
        Xb = np.take_along_axis(X, rows[..., None], axis=1)
        Yb = np.take_along_axis(Y, rows, axis=1)
        W, b = theta[:, : d * C].reshape(K, d, C), theta[:, d * C :]
        logits = Xb @ W + b[:, None, :]
        prob = np.exp(logits - logits.max(axis=2, keepdims=True))
        prob /= prob.sum(axis=2, keepdims=True)
        prob[np.arange(K)[:, None], np.arange(rows.shape[1])[None, :], Yb] -= 1
        prob /= rows.shape[1]
        return np.concatenate([(Xb.transpose(0, 2, 1) @ prob).reshape(K, -1), prob.sum(axis=1)], axis=1)

    Psi = np.tile(theta0, (K, 1))
    own = Psi.copy()  # FedBN: each client's kept entries
    theta = None  # pFedMe: the personalized models
    for t in range(1, rounds + 1):
        lr = p.lr * (p.lr_decay or 1.0) ** (t - 1)
        start = Psi.copy()
        if kept is not None:
            start[:, kept] = own[:, kept]
        w = start.copy()
        theta = w.copy()
        rngs = [streams.generator(f"sgd/{k}/{t}") for k in clients]
        m = -(-n // p.batch)  # batches per pass
        per_round = {"pfedme": 1, "perfedavg": 2 if p.maml == "fo" else 3}.get(p.local, m)
        E = int(p.epochs)  # whole epochs (a task's epochs is a float)
        passes = E if p.local == "sgd" else -(-E * per_round // m)
        perms = [np.stack([r.permutation(n) for r in rngs]) for _ in range(passes)]
        cut = [perm[:, s : s + p.batch] for perm in perms for s in range(0, n, p.batch)]  # the batch stream
        for r in range(E):
            D = cut[r * per_round : (r + 1) * per_round]
            if p.local == "pfedme":
                for _ in range(p.inner_steps):
                    theta = theta - p.personal_lr * (grad(theta, D[0]) + p.lam * (theta - w))
                w = w - lr * p.lam * (w - theta)
            elif p.local == "perfedavg":
                g = grad(w - p.alpha * grad(w, D[0]), D[1])
                if p.maml == "hf":
                    hv = (grad(w + p.hf_delta * g, D[2]) - grad(w - p.hf_delta * g, D[2])) / (2 * p.hf_delta)
                    g = g - p.alpha * hv
                w = w - p.meta_lr * g
            else:
                for rows in D:
                    w = w - lr * grad(w, rows)
        if kept is not None:
            own = w.copy()
            w = np.where(kept, Psi, w)  # the kept entries never reach the server
        mean = np.tile(zeta @ w, (K, 1))
        Psi = mean if p.server_mix == 1 else Psi + p.server_mix * (mean - Psi)
    used = Psi.copy()
    if kept is not None:
        used[:, kept] = own[:, kept]
    if p.local == "pfedme":
        used = theta
    elif p.local == "perfedavg" and p.alpha:
        used = used - p.alpha * grad(used, np.tile(np.arange(n), (K, 1)))
    return Psi, used


def _local_maps(parts, lr: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Every client's `steps` gradient steps on (1/2n_k)‖X_k w − y_k‖² as one affine map
    w ↦ M_k w + c_k, built for all clients at once (batched matrix products).

    Written independently of netemu.kernels.linear: one step is w ← (I − lr G_k) w + lr h_k
    with G_k = X_kᵀX_k / n_k and h_k = X_kᵀy_k / n_k; the maps compose."""
    d = parts[0][0].shape[1]
    G = np.stack([x.T @ x / y.size for x, y in parts])
    h = np.stack([x.T @ y / y.size for x, y in parts])
    A = np.eye(d) - lr * G
    M, c = np.broadcast_to(np.eye(d), G.shape).copy(), np.zeros(h.shape)
    for _ in range(steps):
        M, c = A @ M, np.einsum("kij,kj->ki", A, c) + lr * h
    return M, c


def _weight(p, staleness):
    return 1.0 if p.staleness == "constant" else (1.0 + staleness) ** -p.a


def _no_ties(times, gap: float = 1e-6) -> None:
    """The replayed order is the emulator's only if no two events are (nearly) simultaneous."""
    t = np.sort(np.asarray(times, dtype=float))
    close = [(a, b) for a, b in zip(t, t[1:]) if b - a <= gap]
    assert not close, f"events too close to call their order (choose other compute times): {close[:3]}"


class _Work:
    """Client k's local work when asked in round r: `steps(k, r)` gradient steps (default
    `local_steps`: all of it), its affine map and its training time `durations[k]` scaled by
    the steps done (the durations are those of the whole work)."""

    def __init__(self, parts, durations, p, steps) -> None:
        self.parts, self.durations, self.p = parts, durations, p
        self.steps = steps or (lambda k, r: p.local_steps)
        self.maps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, k: int, r: int) -> tuple[int, float]:
        s = self.steps(k, r)
        return s, self.durations[k] * s / self.p.local_steps

    def map(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        if s not in self.maps:
            self.maps[s] = _local_maps(self.parts, self.p.lr, s)
        return self.maps[s]


def async_fl(parts, durations, p, rounds: int, steps=None) -> tuple[np.ndarray, list[list[float]], list[int]]:
    """FedBuff (`aggregation = "buffer"`) and FedAsync (`"mix"`) with bounded staleness, on an
    ideal network: client k's training takes `durations[k]` virtual seconds and its answer
    arrives then; messages take no time.  Replays the event order by time: a heap of answers;
    each answer frees its client (to the back of the idle queue) and the freed slots go to the
    idle clients in first-in-first-out order with the current model and version.  Local training
    is each client's affine map (`_local_maps`).  Returns the final model, the staleness of the
    updates used in each metric round and the updates dropped in each.

    `steps(k, r)`: the local steps of client k asked in metric round r (partial work); its
    training then takes `durations[k] · steps / local_steps`.
    """
    work = _Work(parts, durations, p, steps)
    K = len(parts)
    slots = K if p.concurrency == 0 else min(p.concurrency, K)
    x, version, buffered = np.zeros(parts[0][0].shape[1]), 0, []
    idle, busy, heap = deque(range(K)), set(), []
    used, dropped = [[] for _ in range(rounds)], [0] * rounds
    end = rounds * p.round_time

    def dispatch(t):
        while len(busy) < slots and idle:
            k = idle.popleft()
            busy.add(k)
            s, took = work(k, int(t // p.round_time))
            heapq.heappush(heap, (t + took, k, x.copy(), version, s))

    dispatch(0.0)
    times = []
    while heap and heap[0][0] < end:
        t, k, start, tau, s = heapq.heappop(heap)
        times.append(t)
        r = int(t // p.round_time)
        busy.discard(k)
        idle.append(k)
        stale = version - tau
        M, c = work.map(s)
        y = M[k] @ start + c[k]
        if 0 <= p.max_staleness < stale:
            dropped[r] += 1
        elif p.aggregation == "mix":
            alpha = p.alpha * _weight(p, stale)
            x = (1 - alpha) * x + alpha * y
            version += 1
            used[r].append(stale)
        else:
            buffered.append(_weight(p, stale) * (y - start))
            used[r].append(stale)
            if len(buffered) == p.buffer:
                x = x + p.server_lr * np.mean(buffered, axis=0)
                version += 1
                buffered = []
        dispatch(t)
    _no_ties(times + [p.round_time * (r + 1) for r in range(rounds)])
    return x, used, dropped


def sync_fl(parts, durations, p, rounds: int, draw, steps=None) -> tuple[np.ndarray, list[list[float]], list[int]]:
    """Over-commitment and partial aggregation with late updates carried over (`aggregation =
    "sync"`), on an ideal network (client k's answer arrives `durations[k]` after it is asked).

    Each round asks ⌈overcommit·K⌉ of the clients not still training, those with the smallest
    `draw(k, round)`; the round ends at its deadline, or when K fresh answers came.  Every
    client asked in a round trains from the same model (its affine map for its steps).  Fresh answers
    weigh n_k; late ones (carried over) n_k s(τ), τ the rounds they are late; others are
    dropped.  Returns the final model, each round's staleness of the updates used and the
    updates dropped in each.  `steps(k, r)`: as for `async_fl`.
    """
    work = _Work(parts, durations, p, steps)
    K = len(parts)
    n = np.array([y.size for _, y in parts], dtype=float)
    target = p.clients_per_round or K
    x, busy, heap, now = np.zeros(parts[0][0].shape[1]), set(), [], 0.0
    used, dropped, times = [], [], []
    for r in range(rounds):
        free = [k for k in range(K) if k not in busy]
        ask = min(math.ceil(p.overcommit * target), len(free))
        chosen = free if ask == 0 or ask >= len(free) else sorted(free, key=lambda k: draw(k, r))[:ask]
        for k in chosen:
            s, took = work(k, r)
            M, c = work.map(s)
            busy.add(k)
            heapq.heappush(heap, (now + took, k, r, M[k] @ x + c[k] - x))
        quorum = min(target, len(chosen))
        deadline = now + p.round_time
        fresh, late, out = [], [], 0
        end = deadline
        while heap and heap[0][0] < deadline:
            t, k, asked, delta = heapq.heappop(heap)
            times.append(t)
            busy.discard(k)
            tau = r - asked
            if tau == 0:
                fresh.append((k, delta, 0))
                if len(fresh) == quorum:
                    end = t
                    break
            elif p.carry_late and not 0 <= p.max_staleness < tau:
                late.append((k, delta, tau))
            else:
                out += 1
        if end == deadline:
            times.append(deadline)
        both = fresh + late
        if both:
            a = np.array([n[k] * _weight(p, tau) for k, _, tau in both])
            x = x + a @ np.array([delta for _, delta, _ in both]) / a.sum()
        used.append([float(tau) for _, _, tau in both])
        dropped.append(out)
        now = end
    _no_ties(times)
    return x, used, dropped
