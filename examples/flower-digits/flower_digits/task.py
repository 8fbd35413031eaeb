"""The model and the data: multinomial logistic (softmax) regression on scikit-learn's
bundled 8x8 handwritten digits (1797 images, 10 classes), split into partitions."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from sklearn.datasets import load_digits

N_FEATURES, N_CLASSES = 64, 10


def initial_model() -> list[np.ndarray]:
    """Weights (64 x 10) and biases (10,), all zero."""
    return [np.zeros((N_FEATURES, N_CLASSES)), np.zeros(N_CLASSES)]


@lru_cache(maxsize=4)
def _shuffled(seed: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    return X[order] / 16.0, y[order]


def load_partition(partition_id: int, num_partitions: int, seed: int = 0) -> tuple[tuple, tuple]:
    """Partition `partition_id` of `num_partitions` equal shards: (train, test) with 80/20 split."""
    X, y = _shuffled(seed)
    n_test = len(y) // 5
    X_train, y_train = X[n_test:], y[n_test:]
    shard = np.array_split(np.arange(len(y_train)), num_partitions)[partition_id]
    test = np.array_split(np.arange(n_test), num_partitions)[partition_id]
    return (X_train[shard], y_train[shard]), (X[:n_test][test], y[:n_test][test])


def central_test_set(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The held-out 20 % the server evaluates the global model on."""
    X, y = _shuffled(seed)
    n_test = len(y) // 5
    return X[:n_test], y[:n_test]


def _probabilities(model: list[np.ndarray], X: np.ndarray) -> np.ndarray:
    W, b = model
    z = X @ W + b
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def loss_and_accuracy(model: list[np.ndarray], X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy and accuracy."""
    p = _probabilities(model, X)
    loss = -np.mean(np.log(p[np.arange(len(y)), y] + 1e-12))
    return float(loss), float(np.mean(p.argmax(axis=1) == y))


def train(model: list[np.ndarray], X: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[list[np.ndarray], float]:
    """`epochs` full-batch gradient steps on the cross-entropy; returns the model and the final loss."""
    W, b = (m.copy() for m in model)
    onehot = np.eye(N_CLASSES)[y]
    for _ in range(epochs):
        g = (_probabilities([W, b], X) - onehot) / len(y)
        W -= lr * (X.T @ g)
        b -= lr * g.sum(axis=0)
    return [W, b], loss_and_accuracy([W, b], X, y)[0]
