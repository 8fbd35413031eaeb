"""Small fully vectorized NumPy references of the algorithms (ideal network)."""

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
            X = np.array([data.inputs[k][sample[n, k]] for k in part])
            y = np.array([data.outputs[k][sample[n, k]] for k in part])
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
            X = np.array([data.inputs[k][sample[n, k]] for k in idle])
            y = np.array([data.outputs[k][sample[n, k]] for k in idle])
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
