"""flower-digits: a Flower app (softmax regression on scikit-learn's digits, FedAvg)
written only against Flower's API and NumPy.  It knows nothing of netemu."""
